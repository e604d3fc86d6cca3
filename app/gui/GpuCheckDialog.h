// gui/GpuCheckDialog.h — Help → Check this GPU: runs `lorascope-train doctor` (beside this
// program) with --bundle into a temporary folder, shows its report as it is written, and offers
// the support bundle for saving (to attach to a bug report). The current run folder and the
// active profile go into the bundle.
#pragma once

#include <QDialog>
#include <QProcess>
#include <QTemporaryDir>

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace lorascope::app {

class GpuCheckDialog : public QDialog {
  Q_OBJECT

 public:
  GpuCheckDialog(const QString& trainProgram, const QString& runFolder, const QString& profile,
                 QWidget* parent = nullptr);

  QString report() const;  // what doctor printed so far
  // Above the report: the doctor's "no GPU found: this is what runs on the CPU (…)" line when it
  // wrote one ("" until then, and on a machine whose GPU it checks).
  QString leadText() const;
  QString statusText() const;  // below the report: how the check ended
  bool finished() const { return finished_; }
  QString bundlePath() const;  // the temporary bundle, valid while the dialog lives
  // Copies the bundle to `destination`; false (with the reason in the status line) on failure.
  bool saveBundle(const QString& destination);

 signals:
  void checkFinished(int exitCode);

 private:
  void readOutput();
  void onFinished(int exitCode, QProcess::ExitStatus status);
  void findLead();

  QTemporaryDir scratch_;
  QProcess process_;
  QPlainTextEdit* text_;
  QLabel* lead_;
  QLabel* status_;
  QPushButton* save_;
  bool finished_ = false;
};

}  // namespace lorascope::app
