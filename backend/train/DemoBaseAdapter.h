// train/DemoBaseAdapter.h — the demo base's pretraining adapter (train/DemoModel.h): the bytes of
// backend/train/demo_base/pretraining_adapter.safetensors, compiled into the program by
// cmake/EmbedFile.cmake so that every install assembles the same demo base without training it.
#pragma once

#include <span>

namespace lorascope::train {

std::span<const unsigned char> demoBaseAdapterBytes();

}  // namespace lorascope::train
