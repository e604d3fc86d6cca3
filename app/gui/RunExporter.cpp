// gui/RunExporter.cpp — the export child process and its output lines.
#include "gui/RunExporter.h"

namespace lorascope::app {

RunExporter::RunExporter(QString program, QObject* parent)
    : QObject(parent), program_(std::move(program)) {
  process_.setProcessChannelMode(QProcess::MergedChannels);
  connect(&process_, &QProcess::readyReadStandardOutput, this, &RunExporter::readLines);
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart) {
      emit finished(false, tr("cannot run %1: %2").arg(program_, process_.errorString()));
    }
  });
  connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    readLines();
    if (!pending_.isEmpty()) {
      lastLine_ = QString::fromUtf8(pending_).trimmed();
      emit lineReceived(lastLine_);
      pending_.clear();
    }
    if (status == QProcess::CrashExit) {
      emit finished(false, tr("export crashed (%1)").arg(lastLine_));
    } else if (code != 0) {
      emit finished(false, tr("export failed (exit code %1): %2").arg(code).arg(lastLine_));
    } else {
      emit finished(true, lastLine_);
    }
  });
}

RunExporter::~RunExporter() {
  cancel();
}

bool RunExporter::start(const QString& runDir, const QString& destination, Kind kind) {
  if (isRunning()) {
    return false;
  }
  pending_.clear();
  lastLine_.clear();
  const QString flag = kind == Kind::Adapter ? QStringLiteral("--out") : QStringLiteral("--merge");
  process_.start(program_, {QStringLiteral("export"), runDir, flag, destination});
  return true;
}

void RunExporter::cancel() {
  if (isRunning()) {
    process_.kill();
    process_.waitForFinished(2000);
  }
}

void RunExporter::readLines() {
  pending_ += process_.readAllStandardOutput();
  qsizetype newline = 0;
  while ((newline = pending_.indexOf('\n')) >= 0) {
    const QString line = QString::fromUtf8(pending_.left(newline)).trimmed();
    pending_.remove(0, newline + 1);
    if (!line.isEmpty()) {
      lastLine_ = line;
      emit lineReceived(line);
    }
  }
}

}  // namespace lorascope::app
