// gui/MainWindow.h — the main window: menus, the About box and the status line of the build.
#pragma once

#include <QMainWindow>

#include "widgets/AboutDialog.h"

namespace lorascope::app {

// The facts of this build and its GPUs, as the About box shows them.
widgets::AboutFacts collectAboutFacts();

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(widgets::AboutFacts facts, QWidget* parent = nullptr);

 public slots:
  void showAbout();

 private:
  widgets::AboutFacts facts_;
};

}  // namespace lorascope::app
