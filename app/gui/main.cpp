// gui/main.cpp — lorascope, the desktop app.
#include <QApplication>

#include "gui/MainWindow.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("LoRAscope"));
  QApplication::setOrganizationName(QStringLiteral("LoRAscope"));
  lorascope::app::MainWindow window(lorascope::app::collectAboutFacts());
  window.show();
  return QApplication::exec();
}
