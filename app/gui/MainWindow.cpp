// gui/MainWindow.cpp — menus, About box and the status line of the main window.
#include "gui/MainWindow.h"

#include <QApplication>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QStatusBar>

#include "compute/BuildInfo.h"

namespace lorascope::app {

widgets::AboutFacts collectAboutFacts() {
  const compute::BuildInfo& info = compute::buildInfo();
  const compute::GpuInventory inventory = compute::queryGpuInventory();
  widgets::AboutFacts facts;
  facts.version = QString::fromStdString(info.version);
  facts.flavour = QString::fromStdString(info.flavour);
  facts.gpuTargets = QString::fromStdString(info.gpuTargets);
  facts.gpuRuntime = QString::fromStdString(inventory.runtime);
  facts.noDeviceReason = QString::fromStdString(inventory.unavailableReason);
  for (const compute::GpuDeviceInfo& d : inventory.devices) {
    facts.devices << QStringLiteral("%1: %2 [%3], %4 MiB")
                         .arg(d.index)
                         .arg(QString::fromStdString(d.name),
                              QString::fromStdString(d.architecture))
                         .arg(d.totalBytes >> 20);
  }
  return facts;
}

MainWindow::MainWindow(widgets::AboutFacts facts, QWidget* parent)
    : QMainWindow(parent), facts_(std::move(facts)) {
  setWindowTitle(tr("LoRAscope"));
  resize(1100, 720);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About LoRAscope"), this, &MainWindow::showAbout);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);

  auto* welcome = new QLabel(this);
  welcome->setAlignment(Qt::AlignCenter);
  welcome->setWordWrap(true);
  welcome->setText(tr("<h2>LoRAscope %1</h2><p>No run yet.</p>").arg(facts_.version));
  setCentralWidget(welcome);

  const QString gpus = facts_.devices.isEmpty()
                           ? tr("no GPU (%1)").arg(facts_.noDeviceReason)
                           : tr("%n GPU(s)", nullptr, static_cast<int>(facts_.devices.size()));
  statusBar()->showMessage(tr("%1 build · %2").arg(facts_.flavour, gpus));
}

void MainWindow::showAbout() {
  widgets::AboutDialog dialog(facts_, this);
  dialog.exec();
}

}  // namespace lorascope::app
