// gui/Theme.h — light and dark palettes, or the system's (the default). Forced schemes use the
// Fusion style, which draws with the palette everywhere (some platform styles ignore it).
#pragma once

#include <QPalette>
#include <QString>

namespace lorascope::app {

enum class ColorScheme { System, Light, Dark };

QString toString(ColorScheme scheme);                    // "system" | "light" | "dark" (QSettings)
ColorScheme colorSchemeFromString(const QString& name);  // unknown → System
QPalette lightPalette();
QPalette darkPalette();
// Sets the application's style and palette; every widget gets a PaletteChange event.
void applyColorScheme(ColorScheme scheme);

}  // namespace lorascope::app
