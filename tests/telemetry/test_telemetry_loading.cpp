// test_telemetry_loading.cpp — vendor libraries opened at run time: the symbol table (required,
// optional, alternatives) against a real system library, rocm-smi and NVML with their library
// absent or wrong, rocm-smi's real library where one is installed (CI checks the declarations
// against ROCm 6.4's rocm_smi.h at compile time: smi_abi_check.cpp), and the decoding of both
// rsmi_frequencies_t layouts. Live rocm-smi values are untested: no AMD GPU.
#include <QtTest>

#include <cstring>

#include "telemetry/DynamicLibrary.h"
#include "telemetry/NvmlProvider.h"
#include "telemetry/RocmSmiProvider.h"

using namespace lorascope::telemetry;

namespace {
const char* const kLibm = "libm.so.6";  // present on every glibc system
}  // namespace

class TestTelemetryLoading : public QObject {
  Q_OBJECT

 private slots:
  void symbolTableResolvesRequiredAndAlternatives() {
    double (*cosine)(double) = nullptr;
    double (*squareRoot)(double) = nullptr;
    void (*absent)() = nullptr;
    DynamicLibrary library;
    const LoadResult result =
        library.open({"libdoes-not-exist.so.9", kLibm},
                     {{{"cos"}, slotFor(cosine), true},
                      {{"lorascope_no_such_sqrt", "sqrt"}, slotFor(squareRoot), true},
                      {{"lorascope_no_such_symbol"}, slotFor(absent), false}});
    QVERIFY2(result.loaded, result.error.c_str());
    QCOMPARE(result.libraryName, std::string(kLibm));
    QVERIFY(cosine != nullptr);
    QCOMPARE(cosine(0.0), 1.0);
    QCOMPARE(squareRoot(16.0), 4.0);  // the second name of the alternatives resolved
    QVERIFY(absent == nullptr);
    QCOMPARE(result.missingOptional, std::vector<std::string>{"lorascope_no_such_symbol"});
  }

  void missingRequiredSymbolClosesAndResetsSlots() {
    double (*cosine)(double) = nullptr;
    void (*absent)() = nullptr;
    DynamicLibrary library;
    const LoadResult result =
        library.open({kLibm}, {{{"cos"}, slotFor(cosine), true},
                               {{"lorascope_required_missing"}, slotFor(absent), true}});
    QVERIFY(!result.loaded);
    QVERIFY(result.error.find("lorascope_required_missing") != std::string::npos);
    QVERIFY(cosine == nullptr);
    QVERIFY(!library.isOpen());
  }

  void absentLibraryNamesEveryCandidate() {
    void (*fn)() = nullptr;
    DynamicLibrary library;
    const LoadResult result =
        library.open({"liba-missing.so", "libb-missing.so.1"}, {{{"f"}, slotFor(fn), true}});
    QVERIFY(!result.loaded);
    QVERIFY(result.error.find("liba-missing.so, libb-missing.so.1") != std::string::npos);
  }

  void rocmSmiAbsentIsUnavailableNotAnError() {
    RocmSmiProvider provider({"librocm_smi64-lorascope-absent.so.99"});
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("rocm-smi unavailable") != std::string::npos);
    QVERIFY(provider.lastError().find("librocm_smi64-lorascope-absent.so.99") != std::string::npos);
    QVERIFY(provider.devices().empty());
    Snapshot snapshot;
    QVERIFY(!provider.refresh(snapshot));
    QVERIFY(snapshot.devices.empty());
  }

  void rocmSmiWithAWrongLibraryNamesTheMissingSymbol() {
    RocmSmiProvider provider({kLibm});
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("rsmi_init") != std::string::npos);
  }

  void rocmSmiRealLibraryResolvesItsTable() {
    RocmSmiProvider provider;
    const bool initialised = provider.init();
    if (!provider.loadResult().loaded) {
      QSKIP(
          "librocm_smi64 is not installed here (ROCm's rocm-smi library; CI checks the ABI in "
          "its ROCm 6.4 chroot instead)");
    }
    // Every required symbol resolved; init itself needs an AMD GPU and its driver.
    if (initialised) {
      QVERIFY(!provider.devices().empty());
      Snapshot snapshot;
      QVERIFY(provider.refresh(snapshot));
      QVERIFY(snapshot.devices.at(0).vramTotalBytes.has_value());
    } else {
      QVERIFY2(!provider.lastError().empty(), "an unavailable provider must say why");
      qInfo("rocm-smi loaded (%s) but unavailable: %s", provider.loadResult().libraryName.c_str(),
            provider.lastError().c_str());
    }
  }

  void nvmlAbsentHereIsUnavailable() {
    NvmlProvider provider({"libnvidia-ml-lorascope-absent.so.1"});
    QVERIFY(!provider.init());
    QVERIFY(provider.lastError().find("NVML unavailable") != std::string::npos);
    QVERIFY(provider.lastError().find("libnvidia-ml-lorascope-absent.so.1") != std::string::npos);
    NvmlProvider defaultNames;
    if (defaultNames.init()) {
      QSKIP("an NVIDIA driver is present on this machine; the absent case is covered above");
    }
    QVERIFY(!defaultNames.lastError().empty());
  }

  void decodesBothFrequencyLayouts() {
    unsigned char rocm5[512] = {};  // {u32 num_supported=3; u32 current=2; u64 f[32]}
    const std::uint32_t rocm5Header[2] = {3, 2};
    const std::uint64_t rocm5Hz[3] = {500000000, 1200000000, 2500000000};
    std::memcpy(rocm5, rocm5Header, sizeof(rocm5Header));
    std::memcpy(rocm5 + 8, rocm5Hz, sizeof(rocm5Hz));
    QCOMPARE(decodeRsmiCurrentFrequencyHz(rocm5, sizeof(rocm5)).value(), std::uint64_t{2500000000});

    unsigned char rocm6[512] = {};  // {bool deep_sleep=1; u32 num=2; u32 current=1; u64 f[32]}
    rocm6[0] = 1;
    const std::uint32_t rocm6Header[2] = {2, 1};
    const std::uint64_t rocm6Hz[2] = {96000000, 2900000000};
    std::memcpy(rocm6 + 4, rocm6Header, sizeof(rocm6Header));
    std::memcpy(rocm6 + 16, rocm6Hz, sizeof(rocm6Hz));
    QCOMPARE(decodeRsmiCurrentFrequencyHz(rocm6, sizeof(rocm6)).value(), std::uint64_t{2900000000});

    unsigned char garbage[512];
    std::memset(garbage, 0xff, sizeof(garbage));
    QVERIFY(!decodeRsmiCurrentFrequencyHz(garbage, sizeof(garbage)));
    QVERIFY(!decodeRsmiCurrentFrequencyHz(rocm5, 8));  // too short to hold any layout
  }
};

QTEST_GUILESS_MAIN(TestTelemetryLoading)
#include "test_telemetry_loading.moc"
