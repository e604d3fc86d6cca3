// widgets/AboutDialog.cpp — layout of the About box, with a button that copies the facts.
#include "widgets/AboutDialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace lorascope::widgets {

AboutDialog::AboutDialog(const AboutFacts& facts, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("About LoRAscope"));

  const QString none = tr("none");
  QStringList lines;
  lines << tr("Version: %1").arg(facts.version);
  lines << tr("Build flavour: %1").arg(facts.flavour);
  lines << tr("GPU targets: %1").arg(facts.gpuTargets.isEmpty() ? none : facts.gpuTargets);
  lines << tr("GPU runtime: %1").arg(facts.gpuRuntime.isEmpty() ? none : facts.gpuRuntime);
  if (facts.devices.isEmpty()) {
    lines << tr("GPUs: none (%1)").arg(facts.noDeviceReason);
  } else {
    lines << tr("GPUs:");
    for (const QString& device : facts.devices) {
      lines << QStringLiteral("  ") + device;
    }
  }
  factsText_ = lines.join(QLatin1Char('\n'));

  auto* title = new QLabel(tr("<h2>LoRAscope %1</h2>"
                              "<p>LoRA fine-tuning on your own GPU, with its memory, queues and "
                              "errors in plain view.</p>")
                               .arg(facts.version.toHtmlEscaped()),
                           this);
  title->setWordWrap(true);
  auto* factsLabel = new QLabel(factsText_, this);
  factsLabel->setObjectName(QStringLiteral("aboutFacts"));
  factsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  QPushButton* copy = buttons->addButton(tr("&Copy facts"), QDialogButtonBox::ActionRole);
  connect(copy, &QPushButton::clicked, this,
          [this] { QApplication::clipboard()->setText(factsText_); });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title);
  layout->addWidget(factsLabel);
  layout->addWidget(buttons);
}

}  // namespace lorascope::widgets
