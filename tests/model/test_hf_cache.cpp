// test_hf_cache.cpp — model ids resolve offline from a Hugging Face cache laid out as
// huggingface_hub lays it (blobs/, refs/<revision> holding the commit, snapshots/<commit>/ of
// relative symlinks into blobs/), through HF_HUB_CACHE, HF_HOME/hub and
// ~/.cache/huggingface/hub; ModelFolder opens an id; a missing id names every place looked in.
#include "TempDir.h"
#include "TestRunner.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "TestPaths.h"
#include "model/HfCache.h"
#include "model/ModelError.h"
#include "model/ModelFolder.h"

using namespace lorascope;
namespace fs = std::filesystem;

namespace {

const fs::path kModelData = lstest::sourcePath("tests/model/data");
constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

model::EnvLookup envOf(std::map<std::string, std::string> values) {
  return [values](const char* name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
}

// hub/models--<org>--<name>/ as huggingface_hub's snapshot_download leaves it, from the files
// of a reference model folder.
void layOutRepo(const fs::path& hub, const std::string& org, const std::string& name,
                const std::string& revision, const std::string& commit) {
  const fs::path repo = hub / ("models--" + org + "--" + name);
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / commit);
  int blob = 0;
  for (const char* file : {"config.json", "model.safetensors"}) {
    const std::string blobName = "b10b" + std::to_string(blob++);  // a sha256 in real caches
    fs::copy_file(kModelData / "llama_f32_legacy_rope" / file, repo / "blobs" / blobName,
                  fs::copy_options::overwrite_existing);
    // A symlink to the blob, as the hub writes it; a copy where the system makes no symlink
    // (Windows without developer mode, Wine), as huggingface_hub does there.
    std::error_code noSymlink;
    fs::create_symlink(fs::path("..") / ".." / "blobs" / blobName,
                       repo / "snapshots" / commit / file, noSymlink);
    if (noSymlink)
      fs::copy_file(repo / "blobs" / blobName, repo / "snapshots" / commit / file);
  }
  std::ofstream(repo / "refs" / revision) << commit;  // no trailing newline, as the hub writes it
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const model::ModelError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

lstest::TempDir tmp_;
fs::path root() {
  return tmp_.path();
}

TEST_CASE(idsLookLikeIds) {
  VERIFY(model::looksLikeModelId("Qwen/Qwen2.5-0.5B-Instruct"));
  VERIFY(model::looksLikeModelId("gpt2"));
  VERIFY(model::looksLikeModelId("meta-llama/Llama-3.2-1B@v1.0"));
  VERIFY(!model::looksLikeModelId("/models/qwen"));
  VERIFY(!model::looksLikeModelId("/qwen"));  // an absolute path, not an id with its org left out
  VERIFY(!model::looksLikeModelId("./qwen"));
  VERIFY(!model::looksLikeModelId("../qwen"));
  VERIFY(!model::looksLikeModelId("~/qwen"));
  VERIFY(!model::looksLikeModelId("models/org/name"));
  VERIFY(!model::looksLikeModelId("org/"));
}

TEST_CASE(cacheFoldersFollowHuggingfaceHub) {
  const auto dirs = model::hubCacheDirs(
      envOf({{"HF_HUB_CACHE", "/a/hub"}, {"HF_HOME", "/b"}, {"HOME", "/home/u"}}));
  COMPARE(dirs.size(), std::size_t{3});
  COMPARE(dirs[0], fs::path("/a/hub"));
  COMPARE(dirs[1], fs::path("/b/hub"));
  COMPARE(dirs[2], fs::path("/home/u/.cache/huggingface/hub"));
  COMPARE(model::hubCacheDirs(envOf({{"XDG_CACHE_HOME", "/x"}})).front(),
          fs::path("/x/huggingface/hub"));
}

TEST_CASE(resolvesFromEachCacheLocation) {
  layOutRepo(root() / "hubcache", "test-org", "tiny-llama", "main", kCommit);
  layOutRepo(root() / "hfhome" / "hub", "home-org", "tiny", "main", kCommit);
  layOutRepo(root() / "user" / ".cache" / "huggingface" / "hub", "user-org", "tiny", "main",
             kCommit);
  const auto env = envOf({{"HF_HUB_CACHE", (root() / "hubcache").string()},
                          {"HF_HOME", (root() / "hfhome").string()},
                          {"HOME", (root() / "user").string()}});
  const model::ResolvedModel a = model::resolveModel("test-org/tiny-llama", env);
  COMPARE(a.dir, root() / "hubcache" / "models--test-org--tiny-llama" / "snapshots" / kCommit);
  COMPARE(a.modelId.value(), std::string("test-org/tiny-llama"));
  COMPARE(a.revision, std::string("main"));
  COMPARE(model::resolveModel("home-org/tiny", env).dir.parent_path().parent_path(),
          root() / "hfhome" / "hub" / "models--home-org--tiny");
  COMPARE(model::resolveModel("user-org/tiny", env).modelId.value(), std::string("user-org/tiny"));
  // A folder path is taken as it is, with no id.
  const model::ResolvedModel folder =
      model::resolveModel((kModelData / "llama_f32_legacy_rope").string(), env);
  VERIFY(!folder.modelId);
}

TEST_CASE(resolvesRevisionsAndCommits) {
  layOutRepo(root() / "rev", "org", "m", "v2", kCommit);
  const auto env = envOf({{"HF_HUB_CACHE", (root() / "rev").string()}});
  const model::ResolvedModel tagged = model::resolveModel("org/m@v2", env);
  COMPARE(tagged.revision, std::string("v2"));
  COMPARE(tagged.dir.filename().string(), std::string(kCommit));
  COMPARE(model::resolveModel(std::string("org/m@") + kCommit, env).dir, tagged.dir);
  // refs/main was never written: main was not downloaded (named with the system's separator).
  const std::string message = errorOf([&] { model::resolveModel("org/m", env); });
  const std::string refsMain = (fs::path("refs") / "main").string();
  VERIFY2(message.find(refsMain + " (absent") != std::string::npos, message.c_str());
}

TEST_CASE(modelFolderOpensAnId) {
  layOutRepo(root() / "open", "test-org", "tiny-llama", "main", kCommit);
  lstest::setEnvironment("HF_HUB_CACHE", (root() / "open").string());
  const model::ModelFolder folder = model::ModelFolder::open("test-org/tiny-llama");
  VERIFY(folder.dir().find("snapshots") != std::string::npos);
  COMPARE(
      folder.config().numLayers,
      model::ModelFolder::open((kModelData / "llama_f32_legacy_rope").string()).config().numLayers);
  lstest::unsetEnvironment("HF_HUB_CACHE");
}

TEST_CASE(missingIdListsWhereItLooked) {
  const auto env = envOf({{"HF_HUB_CACHE", "/nonexistent/hub"},
                          {"HF_HOME", "/nonexistent/home"},
                          {"HOME", "/nonexistent/user"}});
  const std::string message = errorOf([&] { model::resolveModel("Qwen/Qwen2.5-0.5B", env); });
  // The places joined with the system's separator ('\\' on Windows).
  const auto place = [](const fs::path& hub) {
    return (hub / "models--Qwen--Qwen2.5-0.5B").string();
  };
  for (const std::string& where :
       {place("/nonexistent/hub"), place(fs::path("/nonexistent/home") / "hub"),
        place(fs::path("/nonexistent/user") / ".cache" / "huggingface" / "hub"),
        std::string("huggingface-cli download Qwen/Qwen2.5-0.5B")}) {
    VERIFY2(message.find(where) != std::string::npos, message.c_str());
  }
  const std::string path = errorOf([&] { model::resolveModel("/nonexistent/model", env); });
  VERIFY2(path.find("/nonexistent/model: does not exist (expected a Hugging Face model folder or "
                    "id)") != std::string::npos,
          path.c_str());
  // One slash in front is a path too, not an id whose cache folder is "models----nonexistent".
  const std::string rooted = errorOf([&] { model::resolveModel("/nonexistent", env); });
  VERIFY2(rooted.find("/nonexistent: does not exist") != std::string::npos, rooted.c_str());
  const std::string file = (kModelData / "llama_f32_legacy_rope" / "config.json").string();
  VERIFY(errorOf([&] { model::resolveModel(file, env); }).find(": is not a folder") !=
         std::string::npos);
}
