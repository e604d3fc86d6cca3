// HfCache.h — a model given as a Hugging Face id ("Qwen/Qwen2.5-0.5B-Instruct", optionally
// "@revision"), found offline in the cache huggingface_hub fills:
//   <hub cache>/models--<org>--<name>/refs/<revision>    the commit hash of that revision
//   <hub cache>/models--<org>--<name>/snapshots/<hash>/  the files (symlinks into blobs/)
// The hub cache is $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub (huggingface_hub's order); each one that is set is searched, in that
// order. Nothing is downloaded: LoRAscope never uses the network.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::model {

struct ResolvedModel {
  std::filesystem::path dir;           // the model folder
  std::optional<std::string> modelId;  // "org/name" when given as an id
  std::string revision;                // "main" unless given as id@revision
};

// Reads an environment variable (std::getenv in the program; a table in tests).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup processEnvironment();

// The hub cache folders to search, in order, without duplicates.
std::vector<std::filesystem::path> hubCacheDirs(const EnvLookup& env);

// Whether `spec` has the shape of a model id ("name", "org/name", either with "@revision") rather
// than a path: no leading "/", "./", "../" or "~", at most one "/".
bool looksLikeModelId(std::string_view spec);

// An existing folder is taken as it is; otherwise a model id is looked up in the hub caches.
// Throws ModelError naming the id and every place looked in (and how to fill the cache) when it
// is in none, or "is not a directory" for a path that does not exist.
ResolvedModel resolveModel(const std::string& spec, const EnvLookup& env = processEnvironment());

}  // namespace lorascope::model
