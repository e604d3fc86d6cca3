# installers — packages of what the install() rules install (CPack, `cpack -G <generator>` in a
# build folder):
#   DEB   Debian/Ubuntu. Dependencies are computed by dpkg-shlibdeps from the libraries the two
#         programs link (Qt 6, OpenBLAS, libstdc++...); the GPU runtimes are loaded at run time
#         when present and are not dependencies. scripts/check-deb.sh builds it from a cpu build,
#         installs it into a clean Debian 12 chroot, runs it and removes it.
#   NSIS  the Windows installer, a 64-bit NSIS 3 installer (makensis runs on Linux too: Debian's
#         nsis package). From the mingw cross-build (preset mingw): lorascope-train.exe,
#         self-contained (libstdc++, winpthread and the mingw libraries linked statically), with
#         bin/ on PATH on request; with the GUI (Qt from scripts/mingw-qt.sh) also lorascope.exe,
#         the Qt DLLs and plugins of installers/WindowsQt.cmake, Qt's licence texts and where its
#         sources come from, and Start-menu entries for the app and for that notice.
#         scripts/check-windows-installer.sh builds it and installs, runs and uninstalls it under
#         Wine. From a native build with the GUI (MSVC with Qt 6 and OpenBLAS from vcpkg) Qt's
#         files come from windeployqt, through Qt's deploy script: that form is UNTESTED, no
#         Windows machine has built it yet.
set(CPACK_PACKAGE_NAME lorascope)
set(CPACK_PACKAGE_VENDOR "The LoRAscope developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "desktop LoRA trainer for LLMs with live GPU diagnostics")
set(CPACK_PACKAGE_DESCRIPTION
    "LoRAscope fine-tunes LLMs with LoRA on your own GPU (AMD under ROCm/HIP first, with a CPU \
fallback) and shows live what the GPU is doing: VRAM, allocator fragmentation, queue depth and \
loss. lorascope is the desktop app; lorascope-train the command-line trainer and tools.")
set(CPACK_PACKAGE_HOMEPAGE_URL ${LORASCOPE_REPOSITORY_URL})
set(CPACK_PACKAGE_CONTACT "The LoRAscope developers <${LORASCOPE_REPOSITORY_URL}/issues>")
set(CPACK_STRIP_FILES ON)  # the RelWithDebInfo programs carry ~75 MB of debug info
if(LORASCOPE_BUILD_GUI)
  set(CPACK_PACKAGE_EXECUTABLES lorascope LoRAscope)  # the Start-menu entry (NSIS)
endif()

# ---- DEB ----------------------------------------------------------------------------------
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # lorascope_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The icon theme the installed icons go into (its trigger refreshes the icon cache).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "hicolor-icon-theme")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "rocm-smi, bash-completion")

# ---- NSIS ---------------------------------------------------------------------------------------
set(CPACK_PACKAGE_INSTALL_DIRECTORY LoRAscope)
# A 64-bit installer (NSIS's amd64-unicode stubs; its default, a 32-bit one, needs WOW64, which
# Debian 12's Wine lacks) into "Program Files", not "Program Files (x86)".
set(CPACK_NSIS_DEFINES "Target amd64-unicode")
set(CPACK_NSIS_INSTALL_ROOT "$PROGRAMFILES64")
# No license page: the project has no license text to show (CMake's generic one would mislead).
set(CPACK_NSIS_IGNORE_LICENSE_PAGE ON)
set(CPACK_NSIS_PACKAGE_NAME LoRAscope)
set(CPACK_NSIS_DISPLAY_NAME "LoRAscope ${PROJECT_VERSION}")
if(LORASCOPE_BUILD_GUI)
  set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\\\lorascope.exe")  # in Apps & features
else()
  set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\\\lorascope-train.exe")
endif()
set(CPACK_NSIS_URL_INFO_ABOUT ${LORASCOPE_REPOSITORY_URL})
set(CPACK_NSIS_HELP_LINK ${LORASCOPE_REPOSITORY_URL})
set(CPACK_NSIS_MODIFY_PATH ON)  # lorascope-train on PATH
set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)
if(WIN32 AND LORASCOPE_BUILD_GUI AND MINGW)
  include(${CMAKE_CURRENT_LIST_DIR}/WindowsQt.cmake)  # Qt's DLLs, plugins and licence, listed
  set(CPACK_NSIS_MUI_ICON ${PROJECT_BINARY_DIR}/app/lorascope.ico)  # the installer's own icon
  set(CPACK_NSIS_MUI_UNIICON ${PROJECT_BINARY_DIR}/app/lorascope.ico)
  # Beside the app's entry, the notice of Qt's licence and sources (the LGPL asks for both).
  set(CPACK_NSIS_CREATE_ICONS_EXTRA
      "CreateShortCut '$SMPROGRAMS\\$STARTMENU_FOLDER\\Qt licence and sources.lnk' '$INSTDIR\\share\\doc\\LoRAscope\\qt\\SOURCES.txt'")
  set(CPACK_NSIS_DELETE_ICONS_EXTRA
      "Delete '$SMPROGRAMS\\$MUI_TEMP\\Qt licence and sources.lnk'")
elseif(WIN32 AND LORASCOPE_BUILD_GUI)
  # Qt's DLLs and plugins beside lorascope.exe (Qt 6.4's form of the deploy script API), and the
  # compiler's runtime.
  qt_generate_deploy_app_script(TARGET lorascope FILENAME_VARIABLE _lorascope_deploy_script
                                NO_UNSUPPORTED_PLATFORM_ERROR)
  install(SCRIPT ${_lorascope_deploy_script})
  include(InstallRequiredSystemLibraries)
  # OpenBLAS's DLL sits in the bin folder beside its import library's lib folder.
  get_filename_component(_openblas_prefix ${OPENBLAS_LIBRARY} DIRECTORY)
  file(GLOB _openblas_dlls ${_openblas_prefix}/../bin/*openblas*.dll)
  install(FILES ${_openblas_dlls} DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

if(WIN32)
  set(CPACK_GENERATOR NSIS)
else()
  set(CPACK_GENERATOR DEB)
endif()
include(CPack)
