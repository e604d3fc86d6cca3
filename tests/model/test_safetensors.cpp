// test_safetensors.cpp — safetensors header validation: a well-formed file is mapped and read
// without copies; every malformed one is rejected with the file and the tensor named.
#include <QTemporaryDir>
#include <QtTest>

#include "ExpectError.h"
#include "SafetensorsWriter.h"
#include "model/ModelError.h"
#include "model/Safetensors.h"

using namespace lorascope;
using namespace lorascope::test;
using model::ModelError;
using model::SafetensorsFile;

class TestSafetensors : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes) {
    const std::string path = dir_.filePath(QString::fromStdString(name)).toStdString();
    writeFile(path, bytes);
    return path;
  }
  std::vector<std::uint8_t> twoTensors() {
    return safetensorsBytes({{"a", "F32", {2, 2}, f32Bytes({1, 2, 3, 4})},
                             {"b", "BF16", {3}, {0x80, 0x3f, 0x00, 0x40, 0x40, 0xc0}}});
  }

 private slots:
  void readsWellFormedFileWithoutCopying() {
    const std::string path = write("good.safetensors", twoTensors());
    const SafetensorsFile file(path);
    QCOMPARE(file.header().tensors.size(), std::size_t{2});
    const model::SafetensorsEntry* a = file.find("a");
    QVERIFY(a != nullptr);
    QCOMPARE(a->shape, (compute::Shape{2, 2}));
    const compute::Tensor ta = file.tensor(*a);
    QCOMPARE(ta.as<float>()[3], 4.0f);
    // bf16 0x3f80 = 1, 0x4000 = 2, 0xc040 = -3
    const compute::Tensor tb = file.tensor(*file.find("b"));
    QCOMPARE(tb.dtype(), compute::DType::BF16);
    QCOMPARE(tb.as<std::uint16_t>()[2], std::uint16_t{0xc040});
    // Views of the mapping: asking twice gives the same bytes, not two copies.
    QCOMPARE(file.tensor(*a).data(), ta.data());
  }

  void misalignedDataIsCopiedToAlignedMemory() {
    // A header of odd length puts the f32 data at an odd address inside the mapping.
    const std::string header =
        R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";  // 55 bytes
    const std::string path = write("odd.safetensors", safetensorsBytes(header, f32Bytes({5, 6})));
    const SafetensorsFile file(path);
    const compute::Tensor t = file.tensor(*file.find("x"));
    QCOMPARE(reinterpret_cast<std::uintptr_t>(t.data()) % 4, std::uintptr_t{0});
    QCOMPARE(t.as<float>()[1], 6.0f);
  }

  void rejectsTruncatedFile() {
    std::vector<std::uint8_t> bytes = twoTensors();
    bytes.resize(bytes.size() - 4);
    const std::string path = write("truncated.safetensors", bytes);
    QVERIFY(
        throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "tensor 'b'", "truncated"}));
  }

  void rejectsFileShorterThanTheLengthPrefix() {
    const std::string path = write("tiny.safetensors", {1, 2, 3});
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "only 3 bytes"}));
  }

  void rejectsHeaderLengthPastTheEnd() {
    std::vector<std::uint8_t> bytes = twoTensors();
    bytes[0] = 0x00;
    bytes[1] = 0x10;  // 4096 bytes of header in a file of ~130
    const std::string path = write("pastend.safetensors", bytes);
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                   {path, "header length 4096", "runs past the end"}));
  }

  void rejectsHeaderLengthOverTheFormatLimit() {
    std::vector<std::uint8_t> bytes = twoTensors();
    bytes[5] = 0x01;  // 2^40 bytes
    const std::string path = write("huge.safetensors", bytes);
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "exceeds the format"}));
  }

  void rejectsMalformedJson() {
    const std::string path =
        write("badjson.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32",)", {}));
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "not a well-formed"}));
  }

  void rejectsOverlappingOffsets() {
    const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    const std::string path =
        write("overlap.safetensors", safetensorsBytes(header, f32Bytes({1, 2, 3})));
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                   {path, "tensor 'b'", "overlaps tensor 'a'"}));
  }

  void rejectsGapBetweenTensors() {
    const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
    const std::string path =
        write("gap.safetensors", safetensorsBytes(header, f32Bytes({1, 2, 3})));
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                   {path, "gap of 4 bytes before tensor 'b'"}));
  }

  void rejectsUnknownDtype() {
    const std::string header = R"({"w":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,8]}})";
    const std::string path = write("q4.safetensors", safetensorsBytes(header, f32Bytes({1, 2})));
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                   {path, "tensor 'w'", "unknown dtype 'Q4_K'"}));
  }

  void rejectsKnownButUnloadedDtype() {
    const std::string header = R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
    const std::string path = write("f64.safetensors", safetensorsBytes(header, f32Bytes({1, 2})));
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                   {path, "tensor 'w'", "F64 is not loaded"}));
  }

  void rejectsSizeThatIsNotNumelTimesItemsize() {
    const std::string header = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})";
    const std::string path =
        write("size.safetensors", safetensorsBytes(header, f32Bytes({1, 2, 3})));
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                   {path, "tensor 'w'", "span 12 bytes", "needs 16"}));
  }

  void rejectsNegativeDimension() {
    const std::string header = R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})";
    const std::string path = write("neg.safetensors", safetensorsBytes(header, f32Bytes({1})));
    QVERIFY(
        throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "tensor 'w'", "negative"}));
  }

  void rejectsTrailingBytesOwnedByNoTensor() {
    const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    const std::string path = write("tail.safetensors", safetensorsBytes(header, f32Bytes({1, 2})));
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "4 bytes at the end"}));
  }

  void rejectsMissingFile() {
    const std::string path = dir_.filePath("absent.safetensors").toStdString();
    QVERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "cannot open"}));
  }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
