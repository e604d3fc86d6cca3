// engine/IsolatedHost.h — the engine as a child process (`lorascope-train engine`) speaking JSON
// lines on stdin/stdout, started with a profile's environment. A GPU fault that kills the child
// leaves the GUI running: the host reports how it died and the supervisor decides what next.
#pragma once

#include <QByteArray>
#include <QMap>
#include <QProcess>
#include <QString>

#include "engine/EngineHost.h"

namespace lorascope::engine {

// How the child ended, for the supervisor's incident and its choice of recovery rung.
struct EngineExit {
  bool crashed = false;  // killed by a signal (QProcess::CrashExit)
  int exitCode = 0;
  QString stderrTail;  // the last lines it wrote to stderr (runtime messages, abort reasons)
};

class IsolatedHost : public EngineHost {
  Q_OBJECT

 public:
  // `program` is the lorascope-train executable; `environment` is added to this process's own.
  IsolatedHost(QString program, QMap<QString, QString> environment, QObject* parent = nullptr);
  ~IsolatedHost() override;  // asks the child to stop, then kills it if it does not exit

  void start();
  void send(const Command& command) override;
  bool isConnected() const override { return process_.state() == QProcess::Running; }
  qint64 processId() const { return process_.processId(); }
  // Kills the child at once (what the watchdog does to a hung engine).
  void kill();
  // Closes the child's stdin: the engine stops a run with a checkpoint and exits.
  void closeInput() { process_.closeWriteChannel(); }

 signals:
  void exited(const lorascope::engine::EngineExit& exit);

 private:
  void readEvents();
  void readStderr();

  QString program_;
  QMap<QString, QString> environment_;
  QProcess process_;
  QByteArray pending_;  // stdout bytes after the last complete line
  QByteArray stderrTail_;
};

}  // namespace lorascope::engine

Q_DECLARE_METATYPE(lorascope::engine::EngineExit)
