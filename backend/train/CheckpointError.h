// train/CheckpointError.h — the trainer's name for the typed error of run files and the readers
// that raise it, which live with the run folder's read side (runs/RunFileError.h).
#pragma once

#include "runs/RunFileError.h"

namespace lorascope::train {

using CheckpointError = runs::RunFileError;
using runs::appendRunFile;
using runs::readRunFile;
using runs::readRunJson;

}  // namespace lorascope::train
