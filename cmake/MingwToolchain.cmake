# MingwToolchain.cmake — cross-compiling for 64-bit Windows with Debian's mingw-w64 (the posix
# thread model: std::thread and std::mutex over winpthreads), for the mingw preset.
#
# Libraries are looked up only in the mingw-w64 sysroot, in LORASCOPE_MINGW_DEPS (OpenBLAS,
# PCRE2, utf8proc, nlohmann_json as built by scripts/mingw-deps.sh; default build/mingw-deps) and
# in LORASCOPE_MINGW_QT (Qt 6 for mingw as built by scripts/mingw-qt.sh; default build/mingw-qt),
# whose moc, rcc and uic are the host's (QT_HOST_PATH, default /usr: Debian's qt6-base-dev-tools).
# Programs link libgcc, libstdc++ and winpthread statically, so a .exe runs under Wine or on
# Windows with no DLL beside it. CTest runs the test programs through wine64.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(_mingw x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${_mingw}-gcc-posix)
set(CMAKE_CXX_COMPILER ${_mingw}-g++-posix)
set(CMAKE_RC_COMPILER ${_mingw}-windres)

if(NOT LORASCOPE_MINGW_DEPS)
  get_filename_component(LORASCOPE_MINGW_DEPS "${CMAKE_CURRENT_LIST_DIR}/../build/mingw-deps"
                         ABSOLUTE)
endif()
set(LORASCOPE_MINGW_DEPS "${LORASCOPE_MINGW_DEPS}" CACHE PATH
    "Prefix of the mingw builds of OpenBLAS, PCRE2, utf8proc, nlohmann_json (scripts/mingw-deps.sh)")
if(NOT LORASCOPE_MINGW_QT)
  get_filename_component(LORASCOPE_MINGW_QT "${CMAKE_CURRENT_LIST_DIR}/../build/mingw-qt" ABSOLUTE)
endif()
set(LORASCOPE_MINGW_QT "${LORASCOPE_MINGW_QT}" CACHE PATH
    "Prefix of Qt 6 built for mingw (scripts/mingw-qt.sh)")
if(NOT QT_HOST_PATH)
  set(QT_HOST_PATH /usr CACHE PATH "The host's Qt, whose moc, rcc and uic build for Windows")
endif()
# try_compile projects see the same prefixes.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LORASCOPE_MINGW_DEPS LORASCOPE_MINGW_QT
     QT_HOST_PATH)

set(CMAKE_FIND_ROOT_PATH /usr/${_mingw} ${LORASCOPE_MINGW_DEPS} ${LORASCOPE_MINGW_QT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

find_program(LORASCOPE_WINE wine64 PATHS /usr/lib/wine)
if(LORASCOPE_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${LORASCOPE_WINE})
endif()
