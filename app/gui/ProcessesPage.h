// gui/ProcessesPage.h — who holds VRAM: every process the GPU telemetry lists (PID, name, device,
// VRAM, GTT; this run's engine marked), and per device the "held outside this run" diagnosis
// (driver used − our allocator's reserved, attributed to the processes listed, with advice when
// nobody is). Refreshed live from the telemetry sampler, which polls the vendor libraries on
// threads of its own, so a slow driver never stalls the window.
#pragma once

#include <QTimer>
#include <QWidget>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/Providers.h"  // defines: ProviderSet, UnavailableProvider

class QLabel;
class QTableWidget;

namespace lorascope::telemetry {
class Sampler;
}

namespace lorascope::app {

// One provider's latest readings, as the page shows them.
struct ProviderReadings {
  std::string provider;  // "nvml", "rocm-smi", "amdgpu-sysfs", "host"
  telemetry::Snapshot snapshot;
};

class ProcessesPage : public QWidget {
  Q_OBJECT

 public:
  // Opens the telemetry providers (on a thread of its own) and starts sampling when `live`;
  // otherwise the page shows only what show() is given.
  explicit ProcessesPage(bool live, QWidget* parent = nullptr);
  ~ProcessesPage() override;

  // LoRAscope's processes (live: the window and every process below it, read at each refresh) and
  // what the run's allocator has reserved (the last memory event). A run on several GPUs reports
  // each card's (`card`: its device index); each device's diagnosis then counts the reservation
  // on that card only. A reading without a card (one device) ends that.
  void setOurProcesses(std::vector<std::uint32_t> pids) { ourPids_ = std::move(pids); }
  void setOurReservedBytes(std::optional<std::uint64_t> bytes,
                           std::optional<int> card = std::nullopt);

  // Renders readings (the seam tests feed).
  void show(const std::vector<ProviderReadings>& readings,
            const std::vector<telemetry::UnavailableProvider>& unavailable);

  QTableWidget* table() const { return table_; }
  QString diagnosisText() const;

 public slots:
  void refresh();  // reads the sampler's latest snapshots; never waits on a provider

 private:
  void startSampling(telemetry::ProviderSet providers);

  telemetry::ProviderSet providers_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  QTimer timer_;
  std::vector<std::uint32_t> ourPids_;
  std::optional<std::uint64_t> ourReservedBytes_;
  std::map<int, std::uint64_t> ourReservedByCard_;  // a run on several GPUs: per device index
  QLabel* diagnosis_;
  QTableWidget* table_;
  QLabel* sources_;
};

}  // namespace lorascope::app
