// gui/RunExporter.h — exports a run's adapter (PEFT format) or a merged model by running
// `lorascope-train export RUN_DIR --out DIR | --merge DIR` as a child process: a merge of a large
// model takes minutes and must not freeze the window, and the CLI is the one implementation.
// Each line the command prints is passed on as it arrives (the window's log and progress dialog).
#pragma once

#include <QObject>
#include <QProcess>
#include <QStringList>

namespace lorascope::app {

class RunExporter : public QObject {
  Q_OBJECT

 public:
  explicit RunExporter(QString program, QObject* parent = nullptr);
  ~RunExporter() override;  // kills an export still running

  void setProgram(const QString& program) { program_ = program; }
  const QString& program() const { return program_; }

  enum class Kind { Adapter, MergedModel };
  // Starts the export; false when one is already running.
  bool start(const QString& runDir, const QString& destination, Kind kind);
  bool isRunning() const { return process_.state() != QProcess::NotRunning; }
  void cancel();

 signals:
  void lineReceived(const QString& line);
  // `ok` when the command exited 0; `message` is its last line or why it failed.
  void finished(bool ok, const QString& message);

 private:
  void readLines();

  QString program_;
  QProcess process_;
  QByteArray pending_;  // output after the last complete line
  QString lastLine_;
};

}  // namespace lorascope::app
