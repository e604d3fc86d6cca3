// test_op_embedding.cpp — the CPU embedding gather (compute/cpu/embedding.cpp): rows by id from a
// bf16 table, and the error naming a bad id and its position.
#include <QtTest>

#include "ExpectError.h"
#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;
using lorascope::test::throwsWith;

class TestOpEmbedding : public QObject {
  Q_OBJECT

 private slots:
  void embeddingGathersRowsAndNamesBadIds() {
    auto cpu = createCpuBackend();
    const Tensor table = cpu->upload(std::vector<float>{0, 1, 10, 11, 20, 21}, DType::BF16, {3, 2});
    Tensor out = cpu->empty(DType::F32, {3, 2});
    const std::vector<std::int32_t> ids{2, 0, 2};
    cpu->embeddingForward(table, ids, out);
    QCOMPARE(cpu->download(out), (std::vector<float>{20, 21, 0, 1, 20, 21}));
    const std::vector<std::int32_t> bad{0, -1, 1};
    QVERIFY(throwsWith<ShapeError>([&] { cpu->embeddingForward(table, bad, out); },
                                   {"token id -1 at position 1"}));
  }
};

QTEST_APPLESS_MAIN(TestOpEmbedding)
#include "test_op_embedding.moc"
