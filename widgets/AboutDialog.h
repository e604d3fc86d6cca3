// widgets/AboutDialog.h — the About box: version, build flavour, GPU targets and the GPUs the
// HIP runtime reports ("none" with the reason when there are none).
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>

namespace lorascope::widgets {

struct AboutFacts {
  QString version;
  QString flavour;
  QString gpuTargets;   // empty in the cpu build
  QString gpuRuntime;   // empty in the cpu build
  QStringList devices;  // one line per GPU
  QString noDeviceReason;
};

class AboutDialog : public QDialog {
  Q_OBJECT

 public:
  explicit AboutDialog(const AboutFacts& facts, QWidget* parent = nullptr);

  // The text of the facts table, as shown (for copying into bug reports).
  QString factsText() const { return factsText_; }

 private:
  QString factsText_;
};

}  // namespace lorascope::widgets
