// test_safetensors.cpp — safetensors header validation: a well-formed file is mapped and read
// without copies; every malformed one is rejected with the file and the tensor named.
#include "TempDir.h"
#include "TestRunner.h"

#include "ExpectError.h"
#include "SafetensorsWriter.h"
#include "model/ModelError.h"
#include "model/Safetensors.h"

using namespace lorascope;
using namespace lorascope::test;
using model::ModelError;
using model::SafetensorsFile;

lstest::TempDir dir_;

std::string write(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  const std::string path = dir_.filePath(name);
  writeFile(path, bytes);
  return path;
}
std::vector<std::uint8_t> twoTensors() {
  return safetensorsBytes({{"a", "F32", {2, 2}, f32Bytes({1, 2, 3, 4})},
                           {"b", "BF16", {3}, {0x80, 0x3f, 0x00, 0x40, 0x40, 0xc0}}});
}

TEST_CASE(readsWellFormedFileWithoutCopying) {
  const std::string path = write("good.safetensors", twoTensors());
  const SafetensorsFile file(path);
  COMPARE(file.header().tensors.size(), std::size_t{2});
  const model::SafetensorsEntry* a = file.find("a");
  VERIFY(a != nullptr);
  COMPARE(a->shape, (compute::Shape{2, 2}));
  const compute::Tensor ta = file.tensor(*a);
  COMPARE(ta.as<float>()[3], 4.0f);
  // bf16 0x3f80 = 1, 0x4000 = 2, 0xc040 = -3
  const compute::Tensor tb = file.tensor(*file.find("b"));
  COMPARE(tb.dtype(), compute::DType::BF16);
  COMPARE(tb.as<std::uint16_t>()[2], std::uint16_t{0xc040});
  // Views of the mapping: asking twice gives the same bytes, not two copies.
  COMPARE(file.tensor(*a).data(), ta.data());
}

TEST_CASE(misalignedDataIsCopiedToAlignedMemory) {
  // A header of odd length puts the f32 data at an odd address inside the mapping.
  const std::string header =
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";  // 55 bytes
  const std::string path = write("odd.safetensors", safetensorsBytes(header, f32Bytes({5, 6})));
  const SafetensorsFile file(path);
  const compute::Tensor t = file.tensor(*file.find("x"));
  COMPARE(reinterpret_cast<std::uintptr_t>(t.data()) % 4, std::uintptr_t{0});
  COMPARE(t.as<float>()[1], 6.0f);
}

TEST_CASE(rejectsTruncatedFile) {
  std::vector<std::uint8_t> bytes = twoTensors();
  bytes.resize(bytes.size() - 4);
  const std::string path = write("truncated.safetensors", bytes);
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "tensor 'b'", "truncated"}));
}

TEST_CASE(rejectsFileShorterThanTheLengthPrefix) {
  const std::string path = write("tiny.safetensors", {1, 2, 3});
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "only 3 bytes"}));
}

TEST_CASE(rejectsHeaderLengthPastTheEnd) {
  std::vector<std::uint8_t> bytes = twoTensors();
  bytes[0] = 0x00;
  bytes[1] = 0x10;  // 4096 bytes of header in a file of ~130
  const std::string path = write("pastend.safetensors", bytes);
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                {path, "header length 4096", "runs past the end"}));
}

TEST_CASE(rejectsHeaderLengthOverTheFormatLimit) {
  std::vector<std::uint8_t> bytes = twoTensors();
  bytes[5] = 0x01;  // 2^40 bytes
  const std::string path = write("huge.safetensors", bytes);
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "exceeds the format"}));
}

TEST_CASE(rejectsMalformedJson) {
  const std::string path =
      write("badjson.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32",)", {}));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "not a well-formed"}));
}

TEST_CASE(rejectsOverlappingOffsets) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  const std::string path =
      write("overlap.safetensors", safetensorsBytes(header, f32Bytes({1, 2, 3})));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                {path, "tensor 'b'", "overlaps tensor 'a'"}));
}

TEST_CASE(rejectsGapBetweenTensors) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  const std::string path = write("gap.safetensors", safetensorsBytes(header, f32Bytes({1, 2, 3})));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                {path, "gap of 4 bytes before tensor 'b'"}));
}

TEST_CASE(rejectsUnknownDtype) {
  const std::string header = R"({"w":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,8]}})";
  const std::string path = write("q4.safetensors", safetensorsBytes(header, f32Bytes({1, 2})));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                {path, "tensor 'w'", "unknown dtype 'Q4_K'"}));
}

TEST_CASE(rejectsKnownButUnloadedDtype) {
  const std::string header = R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
  const std::string path = write("f64.safetensors", safetensorsBytes(header, f32Bytes({1, 2})));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                {path, "tensor 'w'", "F64 is not loaded"}));
}

TEST_CASE(rejectsSizeThatIsNotNumelTimesItemsize) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})";
  const std::string path = write("size.safetensors", safetensorsBytes(header, f32Bytes({1, 2, 3})));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; },
                                {path, "tensor 'w'", "span 12 bytes", "needs 16"}));
}

TEST_CASE(rejectsNegativeDimension) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})";
  const std::string path = write("neg.safetensors", safetensorsBytes(header, f32Bytes({1})));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "tensor 'w'", "negative"}));
}

TEST_CASE(rejectsTrailingBytesOwnedByNoTensor) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const std::string path = write("tail.safetensors", safetensorsBytes(header, f32Bytes({1, 2})));
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "4 bytes at the end"}));
}

TEST_CASE(rejectsMissingFile) {
  const std::string path = dir_.filePath("absent.safetensors");
  VERIFY(throwsWith<ModelError>([&] { SafetensorsFile{path}; }, {path, "cannot open"}));
}
