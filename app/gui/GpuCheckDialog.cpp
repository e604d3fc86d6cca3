// gui/GpuCheckDialog.cpp — the report of `lorascope-train doctor`, live, and its support bundle.
#include "gui/GpuCheckDialog.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

namespace lorascope::app {

GpuCheckDialog::GpuCheckDialog(const QString& trainProgram, const QString& runFolder,
                               const QString& profile, QWidget* parent)
    : QDialog(parent),
      text_(new QPlainTextEdit(this)),
      lead_(new QLabel(this)),
      status_(new QLabel(this)) {
  setWindowTitle(tr("Check this GPU"));
  resize(900, 640);
  text_->setReadOnly(true);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  save_ = buttons->addButton(tr("Save support bundle…"), QDialogButtonBox::ActionRole);
  save_->setEnabled(false);
  save_->setToolTip(
      tr("A tar of the report, versions, GPU variables, telemetry, the profile and "
         "the run's metrics: no dataset text, no weights, your user name "
         "replaced"));
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(save_, &QPushButton::clicked, this, [this] {
    const QString destination = QFileDialog::getSaveFileName(
        this, tr("Save support bundle"), QStringLiteral("lorascope-support.tar"),
        tr("Tar archives (*.tar)"));
    if (!destination.isEmpty()) {
      saveBundle(destination);
    }
  });
  lead_->setObjectName(QStringLiteral("gpuCheckLead"));
  lead_->setWordWrap(true);
  QFont bold = lead_->font();
  bold.setBold(true);
  lead_->setFont(bold);
  lead_->setVisible(false);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(lead_);
  layout->addWidget(text_, 1);
  layout->addWidget(status_);
  layout->addWidget(buttons);

  process_.setProcessChannelMode(QProcess::MergedChannels);
  connect(&process_, &QProcess::readyRead, this, &GpuCheckDialog::readOutput);
  connect(&process_, &QProcess::finished, this, &GpuCheckDialog::onFinished);
  connect(&process_, &QProcess::errorOccurred, this, [this, trainProgram](QProcess::ProcessError) {
    if (process_.state() == QProcess::NotRunning && !finished_) {
      finished_ = true;
      status_->setText(tr("Could not run %1: %2").arg(trainProgram, process_.errorString()));
      emit checkFinished(-1);
    }
  });
  QStringList args = {QStringLiteral("doctor"), QStringLiteral("--bundle"), bundlePath()};
  if (!runFolder.isEmpty()) {
    args << QStringLiteral("--run") << runFolder;
  }
  if (!profile.isEmpty()) {
    args << QStringLiteral("--profile") << profile;
  }
  status_->setText(
      tr("Checking: the op parity suite and 20 demo steps take about a minute on a "
         "GPU…"));
  process_.start(trainProgram, args);
}

QString GpuCheckDialog::report() const {
  return text_->toPlainText();
}

QString GpuCheckDialog::leadText() const {
  return lead_->text();
}

QString GpuCheckDialog::statusText() const {
  return status_->text();
}

// The doctor's report leads with this line when it had no GPU to check; the progress lines on
// stderr may come first in the merged output, so it is looked for, and put above the report.
void GpuCheckDialog::findLead() {
  static const QRegularExpression line(QStringLiteral("^(no GPU found|no usable GPU): .*$"),
                                       QRegularExpression::MultilineOption);
  if (!lead_->text().isEmpty()) {
    return;
  }
  if (const QRegularExpressionMatch match = line.match(report()); match.hasMatch()) {
    lead_->setText(match.captured(0));
    lead_->setVisible(true);
  }
}

QString GpuCheckDialog::bundlePath() const {
  return scratch_.filePath(QStringLiteral("lorascope-support.tar"));
}

bool GpuCheckDialog::saveBundle(const QString& destination) {
  QFile::remove(destination);
  if (!QFile::copy(bundlePath(), destination)) {
    status_->setText(tr("Could not write %1").arg(destination));
    return false;
  }
  status_->setText(tr("Support bundle saved to %1").arg(destination));
  return true;
}

void GpuCheckDialog::readOutput() {
  text_->moveCursor(QTextCursor::End);
  text_->insertPlainText(QString::fromUtf8(process_.readAll()));
  findLead();
}

void GpuCheckDialog::onFinished(int exitCode, QProcess::ExitStatus status) {
  readOutput();  // what came after the last readyRead
  finished_ = true;
  const bool bundled = QFile::exists(bundlePath());
  save_->setEnabled(bundled);
  if (status != QProcess::NormalExit) {
    status_->setText(tr("The check crashed; the report above is what it wrote before."));
  } else if (!lead_->text().isEmpty()) {  // a pass here is the CPU's, not a GPU's
    status_->setText(exitCode == 0
                         ? tr("No GPU was checked: what runs on the CPU passed, the GPU checks "
                              "were skipped (see above).")
                         : tr("No GPU was checked, and some checks failed: each says what to "
                              "try."));
  } else {
    status_->setText(exitCode == 0 ? tr("Every check passed or was skipped (see above).")
                                   : tr("Some checks failed: each says what to try."));
  }
  emit checkFinished(status == QProcess::NormalExit ? exitCode : -1);
}

}  // namespace lorascope::app
