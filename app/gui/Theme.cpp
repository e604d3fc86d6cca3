// gui/Theme.cpp — the two palettes and switching between them and the system's.
#include "gui/Theme.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>
#include <memory>

namespace lorascope::app {

QString toString(ColorScheme scheme) {
  switch (scheme) {
    case ColorScheme::Light:
      return QStringLiteral("light");
    case ColorScheme::Dark:
      return QStringLiteral("dark");
    case ColorScheme::System:
      break;
  }
  return QStringLiteral("system");
}

ColorScheme colorSchemeFromString(const QString& name) {
  if (name == QLatin1String("light")) {
    return ColorScheme::Light;
  }
  if (name == QLatin1String("dark")) {
    return ColorScheme::Dark;
  }
  return ColorScheme::System;
}

QPalette lightPalette() {
  // QStyleFactory hands over a style nobody owns.
  const std::unique_ptr<QStyle> fusion(QStyleFactory::create(QStringLiteral("Fusion")));
  return fusion->standardPalette();
}

QPalette darkPalette() {
  // Contrast kept at or above WCAG AA for text (#e6e6e6 on #232629 is about 12:1).
  const QColor window(0x2b, 0x2e, 0x33);
  const QColor base(0x23, 0x26, 0x29);
  const QColor text(0xe6, 0xe6, 0xe6);
  const QColor disabledText(0x7f, 0x84, 0x8a);
  const QColor highlight(0x3d, 0xae, 0xe9);
  QPalette p;
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabledText);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
  p.setColor(QPalette::Light, window.lighter(140));
  p.setColor(QPalette::Midlight, window.lighter(120));
  p.setColor(QPalette::Mid, window.lighter(160));
  p.setColor(QPalette::Dark, base.darker(140));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::black);
  p.setColor(QPalette::Link, highlight);
  p.setColor(QPalette::LinkVisited, highlight.darker(120));
  for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) {
    p.setColor(QPalette::Disabled, role, disabledText);
  }
  p.setColor(QPalette::Disabled, QPalette::Highlight, window.lighter(130));
  return p;
}

void applyColorScheme(ColorScheme scheme) {
  // The style the platform chose, remembered before a forced scheme replaces it.
  static const QString systemStyle = QApplication::style()->name();
  if (scheme == ColorScheme::System) {
    QApplication::setStyle(systemStyle);
    QApplication::setPalette(QApplication::style()->standardPalette());
    return;
  }
  QApplication::setStyle(QStringLiteral("Fusion"));
  QApplication::setPalette(scheme == ColorScheme::Dark ? darkPalette() : lightPalette());
}

}  // namespace lorascope::app
