# installers/WindowsQt.cmake — what lorascope.exe needs of Qt on Windows, installed beside it in
# bin/ (the mingw cross-build with Qt from scripts/mingw-qt.sh; included by Packaging.cmake).
# This is the written form of windeployqt, which Qt 6.4 ships in qttools (not built here):
#   the Qt DLLs     Qt6Core, Qt6Gui, Qt6Widgets, Qt6Charts (Qt6Test is the tests' only)
#   the plugins     platforms/qwindows.dll (the window), styles/qwindowsvistastyle.dll (the
#                   native look; Fusion, built into Qt6Widgets, is the fallback)
#   Qt's licence    share/doc/LoRAscope/qt/: LGPL-3.0 and the GPL texts it refers to, and
#                   SOURCES.txt (where these DLLs' sources come from, how they were built)
# Qt looks for plugins in the program's folder, so the folder needs no qt.conf. No compiler
# runtime DLL: mingw-qt.sh links libgcc, libstdc++ and winpthread into each DLL, as the mingw
# toolchain does into the programs. scripts/check-windows-gui.sh checks the list both ways: every
# DLL that lorascope.exe and these files import is either listed here or Windows' own, and the
# installed folder alone (no Qt on Wine's PATH) opens the window under Wine.
set(LORASCOPE_QT_DLLS Qt6::Core Qt6::Gui Qt6::Widgets Qt6::Charts)
set(LORASCOPE_QT_PLUGINS platforms:Qt6::QWindowsIntegrationPlugin
                         styles:Qt6::QWindowsVistaStylePlugin)

foreach(_target ${LORASCOPE_QT_DLLS})
  install(FILES $<TARGET_FILE:${_target}> DESTINATION ${CMAKE_INSTALL_BINDIR})
endforeach()
foreach(_plugin ${LORASCOPE_QT_PLUGINS})
  string(REPLACE ":" ";" _plugin ${_plugin})
  list(GET _plugin 0 _folder)
  list(GET _plugin 1 _target)
  if(NOT TARGET ${_target})
    message(FATAL_ERROR "Qt has no ${_target}: rebuild it with scripts/mingw-qt.sh")
  endif()
  install(FILES $<TARGET_FILE:${_target}> DESTINATION ${CMAKE_INSTALL_BINDIR}/${_folder})
endforeach()

set(_qt_prefix ${QT6_INSTALL_PREFIX})
foreach(_file SOURCES.txt share/qt6-licenses/LGPL-3.0-only.txt share/qt6-licenses/GPL-2.0-only.txt
              share/qt6-licenses/GPL-3.0-only.txt share/qt6-licenses/Qt-GPL-exception-1.0.txt)
  if(NOT EXISTS ${_qt_prefix}/${_file})
    message(FATAL_ERROR "${_qt_prefix} has no ${_file}: it is not scripts/mingw-qt.sh's Qt")
  endif()
  install(FILES ${_qt_prefix}/${_file} DESTINATION ${CMAKE_INSTALL_DOCDIR}/qt)
endforeach()
