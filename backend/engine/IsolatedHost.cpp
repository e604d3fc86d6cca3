// engine/IsolatedHost.cpp — child process management and the JSON-lines transport.
#include "engine/IsolatedHost.h"

#include <QProcessEnvironment>

namespace lorascope::engine {
namespace {

constexpr int kStderrTailBytes = 4096;   // enough for a runtime's abort message
constexpr int kGracefulExitMs = 3000;    // time the child gets to checkpoint after stdin closes
constexpr int kMaxLineBytes = 64 << 20;  // a snapshot of a big allocator fits; a runaway does not

}  // namespace

IsolatedHost::IsolatedHost(QString program, QMap<QString, QString> environment, QObject* parent)
    : EngineHost(parent), program_(std::move(program)), environment_(std::move(environment)) {
  registerEngineMetaTypes();
  qRegisterMetaType<EngineExit>("lorascope::engine::EngineExit");
  connect(&process_, &QProcess::readyReadStandardOutput, this, &IsolatedHost::readEvents);
  connect(&process_, &QProcess::readyReadStandardError, this, &IsolatedHost::readStderr);
  connect(&process_, &QProcess::started, this, [this] { emit connectedChanged(true); });
  connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    readEvents();
    readStderr();
    emit connectedChanged(false);
    emit exited(EngineExit{status == QProcess::CrashExit, code, QString::fromUtf8(stderrTail_)});
  });
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart) {
      emit eventReceived(
          TimedEvent{0, ErrorEvent{"engine", "start", 0,
                                   "cannot start the engine " + program_.toStdString() + ": " +
                                       process_.errorString().toStdString(),
                                   "reinstall LoRAscope: lorascope-train must sit beside "
                                   "lorascope",
                                   false}});
      emit exited(EngineExit{true, -1, process_.errorString()});
    }
  });
}

IsolatedHost::~IsolatedHost() {
  if (process_.state() == QProcess::NotRunning) {
    return;
  }
  process_.closeWriteChannel();  // the engine stops, checkpointing, when its stdin ends
  if (!process_.waitForFinished(kGracefulExitMs)) {
    process_.kill();
    process_.waitForFinished(kGracefulExitMs);
  }
}

void IsolatedHost::start() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (auto it = environment_.cbegin(); it != environment_.cend(); ++it) {
    env.insert(it.key(), it.value());
  }
  process_.setProcessEnvironment(env);
  pending_.clear();
  stderrTail_.clear();
  process_.start(program_, {QStringLiteral("engine")});
}

void IsolatedHost::send(const Command& command) {
  if (process_.state() == QProcess::NotRunning) {
    emit eventReceived(TimedEvent{0, ErrorEvent{"engine", std::string(commandType(command)), 0,
                                                "the engine process is not running", "", false}});
    return;
  }
  QByteArray line = QByteArray::fromStdString(encodeCommand(command));
  line.append('\n');
  process_.write(line);  // while still starting, QProcess keeps it until the child runs
}

void IsolatedHost::kill() {
  process_.kill();
}

void IsolatedHost::readEvents() {
  pending_.append(process_.readAllStandardOutput());
  qsizetype newline;
  while ((newline = pending_.indexOf('\n')) >= 0) {
    const QByteArray line = pending_.left(newline);
    pending_.remove(0, newline + 1);
    if (line.trimmed().isEmpty()) {
      continue;
    }
    try {
      emit eventReceived(
          decodeEvent(std::string_view(line.constData(), static_cast<std::size_t>(line.size()))));
    } catch (const ProtocolError& e) {
      emit eventReceived(TimedEvent{0, protocolErrorEvent(e, line.toStdString())});
    }
  }
  if (pending_.size() > kMaxLineBytes) {
    emit eventReceived(TimedEvent{
        0, ErrorEvent{"protocol", "", 0, "the engine wrote a line longer than 64 MiB; dropped",
                      "report this as a bug", false}});
    pending_.clear();
  }
}

void IsolatedHost::readStderr() {
  const QByteArray text = process_.readAllStandardError();
  if (text.isEmpty()) {
    return;
  }
  stderrTail_.append(text);
  if (stderrTail_.size() > kStderrTailBytes) {
    stderrTail_ = stderrTail_.right(kStderrTailBytes);
  }
  for (const QByteArray& line : text.split('\n')) {
    if (!line.trimmed().isEmpty()) {
      emit eventReceived(
          TimedEvent{0, LogEvent{LogLevel::Warning, "engine: " + line.toStdString()}});
    }
  }
}

}  // namespace lorascope::engine
