// train/Merge.cpp — folding a LoRA adapter into a copy of the base model's safetensors files.
#include "train/Merge.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/DurableFile.h"
#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "compute/Bf16.h"
#include "compute/Convert.h"
#include "model/ModelFolder.h"
#include "model/Safetensors.h"
#include "train/CheckpointError.h"
#include "train/PeftExport.h"
#include "train/SafetensorsWriter.h"

namespace lorascope::train {
namespace fs = std::filesystem;

namespace {

// Files of a model folder that hold weights: never copied (a stale unmerged copy would load).
bool isWeightsFile(const fs::path& path) {
  static const std::set<std::string> kWeightExtensions = {
      ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx"};
  return kWeightExtensions.count(common::pathText(path.extension())) != 0;
}

// W (out, in) as stored + scale · B (out, r) · A (r, in), rounded once to the stored dtype.
std::vector<std::byte> mergedBytes(const compute::Tensor& base, const LoraWeights& w,
                                   std::int64_t rank, double scale) {
  const std::int64_t out = w.site.outFeatures;
  const std::int64_t in = w.site.inFeatures;
  std::vector<float> merged(static_cast<std::size_t>(out * in));
  compute::widenToFloat(base.data(), base.dtype(), 0, out * in, merged.data());
  for (std::int64_t o = 0; o < out; ++o) {
    float* row = merged.data() + o * in;
    std::vector<float> delta(static_cast<std::size_t>(in), 0.0f);
    for (std::int64_t k = 0; k < rank; ++k) {
      const float b = w.b[static_cast<std::size_t>(o * rank + k)];
      const float* a = w.a.data() + k * in;
      for (std::int64_t i = 0; i < in; ++i) {
        delta[static_cast<std::size_t>(i)] += b * a[i];
      }
    }
    for (std::int64_t i = 0; i < in; ++i) {
      row[i] += static_cast<float>(scale * delta[static_cast<std::size_t>(i)]);
    }
  }
  std::vector<std::byte> bytes(merged.size() * compute::dtypeBytes(base.dtype()));
  if (base.dtype() == compute::DType::F32) {
    std::memcpy(bytes.data(), merged.data(), bytes.size());
    return bytes;
  }
  std::vector<std::uint16_t> narrow(merged.size());
  for (std::size_t i = 0; i < merged.size(); ++i) {
    narrow[i] = base.dtype() == compute::DType::BF16 ? compute::floatToBf16(merged[i])
                                                     : floatToF16(merged[i]);
  }
  std::memcpy(bytes.data(), narrow.data(), bytes.size());
  return bytes;
}

// Removes a half-assembled output folder unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(fs::path dir) : dir_(std::move(dir)) {}
  ~TempDirGuard() {
    if (!dir_.empty()) {
      std::error_code ignored;
      fs::remove_all(dir_, ignored);
    }
  }
  TempDirGuard(const TempDirGuard&) = delete;
  TempDirGuard& operator=(const TempDirGuard&) = delete;
  void release() { dir_.clear(); }

 private:
  fs::path dir_;
};

// The mark of a merge's staging folder ("<out>.tmp-<pid>", beside the output): a folder of that
// name without it is someone else's and is never removed.
constexpr const char* kMergeStagingMark = ".lorascope-merge-staging";

// The staging folders of merges whose process was killed (a merge writes the whole model: a
// 7B one leaves GBs behind), removed before the next merge into the same folder starts.
void removeKilledMerges(const fs::path& parent) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    if (common::isStaleTempName(common::pathText(entry.path().filename())) &&
        fs::exists(entry.path() / kMergeStagingMark, ec)) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

}  // namespace

std::uint16_t floatToF16(float value) {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // inf, or NaN kept quiet
    return static_cast<std::uint16_t>(sign | 0x7c00u |
                                      (magnitude > 0x7f800000u ? 0x0200u : 0x0000u));
  }
  if (magnitude >= 0x477ff000u) {  // ≥ 65520 rounds past the largest half (65504)
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  }
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal half, m · 2^-24
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;  // exact: power of two
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
  }
  // Normal: round to nearest even at mantissa bit 13, then re-bias the exponent (127 → 15).
  const std::uint32_t rounded = magnitude + 0x0fffu + ((magnitude >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | ((rounded >> 13) - (112u << 10)));
}

MergeReport mergeAdapterIntoModel(const fs::path& baseDir, const LoraAdapter& adapter,
                                  const fs::path& outDir, const MergeProgress& progress) {
  const model::ModelFolder base = model::ModelFolder::open(common::pathText(baseDir));
  checkAdapterFitsModel(adapter, base.config(), common::pathText(baseDir));
  requireFiniteAdapter(adapter, "merge into " + common::pathText(outDir));
  if (fs::exists(outDir)) {
    throw CheckpointError(common::pathText(outDir),
                          "already exists; choose a new folder for the merged model or remove it");
  }
  const fs::path parent = outDir.has_parent_path() ? outDir.parent_path() : fs::path(".");
  fs::create_directories(parent);
  removeKilledMerges(parent);
  const fs::path temp =
      parent / common::pathFromUtf8(common::pathText(outDir.filename()) + common::tempSuffix());
  fs::remove_all(temp);
  fs::create_directory(temp);
  TempDirGuard guard(temp);
  common::writeFileDurably(temp / kMergeStagingMark, "");

  std::map<std::string, const LoraWeights*> adapted;  // base tensor name → adapter weights
  for (const LoraWeights& w : adapter.weights) {
    adapted["model.layers." + std::to_string(w.site.layer) + "." + modulePath(w.site.module) +
            ".weight"] = &w;
  }
  const double scale = adapter.config.scale();
  const std::uint64_t totalBytes = base.weightBytes();
  std::uint64_t doneBytes = 0;
  const TensorWritten written = [&](std::uint64_t bytes) {
    doneBytes += bytes;
    if (progress) {
      progress(doneBytes, totalBytes);
    }
  };
  MergeReport report;
  for (const std::string& path : base.files()) {
    const model::SafetensorsFile file(path);
    std::vector<compute::Tensor> keepAlive;
    std::vector<TensorToWrite> tensors;
    for (const auto& [name, entry] : file.header().tensors) {
      compute::Tensor t = file.tensor(entry);
      TensorToWrite out{name, entry.dtype, entry.shape, {}, {}};
      const auto it = adapted.find(name);
      if (it != adapted.end()) {
        const LoraWeights* w = it->second;
        const std::int64_t rank = adapter.config.rank;
        out.produce = [t, w, rank, scale] { return mergedBytes(t, *w, rank, scale); };
        ++report.mergedTensors;
      } else {
        out.bytes = std::span(static_cast<const std::byte*>(t.data()), t.bytes());
        ++report.copiedTensors;
      }
      keepAlive.push_back(std::move(t));
      tensors.push_back(std::move(out));
    }
    writeSafetensors(temp / common::pathFromUtf8(path).filename(), tensors, {{"format", "pt"}},
                     written);
  }
  if (report.mergedTensors != static_cast<std::int64_t>(adapter.weights.size())) {
    throw CheckpointError(common::pathText(baseDir),
                          "only " + std::to_string(report.mergedTensors) + " of the adapter's " +
                              std::to_string(adapter.weights.size()) +
                              " projections were found in the weights files");
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(baseDir)) {
    if (entry.is_regular_file() && !isWeightsFile(entry.path())) {
      common::writeFileDurably(temp / entry.path().filename(), readRunFile(entry.path()));
      ++report.copiedFiles;
    }
  }
  fs::remove(temp / kMergeStagingMark);
  common::replaceDirectory(temp, outDir);  // outDir is absent (checked above): a rename
  guard.release();
  return report;
}

}  // namespace lorascope::train
