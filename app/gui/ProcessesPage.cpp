// gui/ProcessesPage.cpp — the process table and the held-outside diagnosis.
#include "gui/ProcessesPage.h"

#include <QCoreApplication>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "common/Platform.h"        // defines: processTree
#include "gui/Background.h"         // defines: runInBackground
#include "telemetry/HeldOutside.h"  // defines: diagnoseHeldOutside
#include "telemetry/Sampler.h"
#include "widgets/DisplayText.h"  // defines: formatBytes

namespace lorascope::app {

namespace {

std::uint32_t windowPid() {
  return static_cast<std::uint32_t>(QCoreApplication::applicationPid());
}

// The table refreshes at 1 Hz: VRAM holders change on the scale of seconds, and a faster table is
// hard to read.
constexpr int kRefreshMs = 1000;

enum Column { Pid, Name, Device, Vram, Gtt, Provider, ColumnCount };

QTableWidgetItem* numberItem(const QString& text) {
  auto* item = new QTableWidgetItem(text);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QString bytesOrNa(std::optional<std::uint64_t> bytes) {
  return widgets::formatBytes(bytes);
}

}  // namespace

ProcessesPage::ProcessesPage(bool live, QWidget* parent) : QWidget(parent) {
  diagnosis_ = new QLabel(tr("Reading GPU telemetry …"));
  diagnosis_->setWordWrap(true);
  diagnosis_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  table_ = new QTableWidget(0, ColumnCount);
  table_->setHorizontalHeaderLabels(
      {tr("PID"), tr("Process"), tr("Device"), tr("VRAM"), tr("GTT"), tr("Source")});
  table_->horizontalHeader()->setSectionResizeMode(Name, QHeaderView::Stretch);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setToolTip(
      tr("Processes the GPU driver lists as holding device memory; bold = "
         "LoRAscope: this window and the engines it started"));
  sources_ = new QLabel;
  sources_->setWordWrap(true);
  sources_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(diagnosis_);
  layout->addWidget(table_, 1);
  layout->addWidget(sources_);
  ourPids_ = {windowPid()};

  connect(&timer_, &QTimer::timeout, this, &ProcessesPage::refresh);
  if (live) {
    runInBackground<telemetry::ProviderSet>(
        this, [](const ReportProgress&) { return telemetry::openProviders(); }, [](int) {},
        [this](telemetry::ProviderSet providers) { startSampling(std::move(providers)); });
  }
}

ProcessesPage::~ProcessesPage() {
  if (sampler_) {
    sampler_->stop();
  }
}

void ProcessesPage::startSampling(telemetry::ProviderSet providers) {
  providers_ = std::move(providers);
  std::vector<std::shared_ptr<telemetry::Provider>> all = providers_.gpu;
  if (providers_.host) {
    all.push_back(providers_.host);
  }
  telemetry::SamplerOptions options;
  options.interval = std::chrono::milliseconds(kRefreshMs);
  options.historySamples = 1;  // the page shows the latest reading only
  sampler_ = std::make_unique<telemetry::Sampler>(std::move(all), options);
  sampler_->start();
  timer_.start(kRefreshMs);
  refresh();
}

void ProcessesPage::setOurReservedBytes(std::optional<std::uint64_t> bytes,
                                        std::optional<int> card) {
  if (!card) {
    ourReservedByCard_.clear();
    ourReservedBytes_ = bytes;
  } else {
    ourReservedByCard_[*card] = bytes.value_or(0);
  }
}

void ProcessesPage::refresh() {
  if (!sampler_) {
    return;
  }
  std::vector<ProviderReadings> readings;
  std::vector<std::shared_ptr<telemetry::Provider>> all = providers_.gpu;
  if (providers_.host) {
    all.push_back(providers_.host);
  }
  for (const auto& provider : all) {
    if (auto snapshot = sampler_->latest(provider->name())) {
      readings.push_back({provider->name(), std::move(*snapshot)});
    }
  }
  // The window and everything it started (the run's engine, each rank of a group, Try it's
  // engine): what they hold is LoRAscope's, not another process's.
  ourPids_ = common::processTree(windowPid());
  show(readings, providers_.unavailable);
}

void ProcessesPage::show(const std::vector<ProviderReadings>& readings,
                         const std::vector<telemetry::UnavailableProvider>& unavailable) {
  table_->setRowCount(0);
  QStringList diagnosis;
  QStringList sources;
  bool anyGpu = false;
  for (const ProviderReadings& r : readings) {
    if (r.snapshot.host) {
      const telemetry::HostReading& h = *r.snapshot.host;
      sources << tr("Host RAM: %1 available of %2; this app %3")
                     .arg(bytesOrNa(h.ramAvailableBytes), bytesOrNa(h.ramTotalBytes),
                          bytesOrNa(h.processRssBytes));
    }
    if (r.snapshot.devices.empty()) {
      continue;
    }
    anyGpu = true;
    const QString provider = QString::fromStdString(r.provider);
    std::vector<telemetry::ProcessReading> processes = r.snapshot.processes;
    std::stable_sort(processes.begin(), processes.end(), [](const auto& a, const auto& b) {
      return a.vramBytes.value_or(0) > b.vramBytes.value_or(0);  // largest holder first
    });
    for (const telemetry::ProcessReading& p : processes) {
      const int row = table_->rowCount();
      table_->insertRow(row);
      table_->setItem(row, Pid, numberItem(QString::number(p.pid)));
      auto* name = new QTableWidgetItem(p.name.empty() ? tr("(not readable here)")
                                                       : QString::fromStdString(p.name));
      if (std::find(ourPids_.begin(), ourPids_.end(), p.pid) != ourPids_.end()) {
        QFont bold = name->font();
        bold.setBold(true);
        name->setFont(bold);
        name->setText(
            (p.pid == windowPid() ? tr("%1 — this window") : tr("%1 — LoRAscope's engine"))
                .arg(name->text()));
      }
      table_->setItem(row, Name, name);
      table_->setItem(row, Device,
                      new QTableWidgetItem(p.deviceIndex ? QString::number(*p.deviceIndex)
                                                         : widgets::notAvailable()));
      table_->setItem(row, Vram, numberItem(bytesOrNa(p.vramBytes)));
      table_->setItem(row, Gtt, numberItem(bytesOrNa(p.gttBytes)));
      table_->setItem(row, Provider, new QTableWidgetItem(provider));
    }
    for (const telemetry::DeviceReading& device : r.snapshot.devices) {
      telemetry::HeldOutsideInput input;
      input.device = device;
      input.processes = r.snapshot.processes;
      const auto onCard = ourReservedByCard_.find(device.index);
      input.ourReservedBytes = ourReservedByCard_.empty()           ? ourReservedBytes_.value_or(0)
                               : onCard != ourReservedByCard_.end() ? onCard->second
                                                                    : 0;
      input.ourPids = ourPids_;
      input.provider = r.provider;
      const telemetry::HeldOutsideReport report = telemetry::diagnoseHeldOutside(input);
      QString text = tr("<b>Device %1</b> (%2): %3")
                         .arg(device.index)
                         .arg(provider, QString::fromStdString(report.summary).toHtmlEscaped());
      for (const std::string& advice : report.advice) {
        text += QStringLiteral("<br>• ") + QString::fromStdString(advice).toHtmlEscaped();
      }
      diagnosis << text;
    }
  }
  if (!anyGpu) {
    diagnosis << tr(
        "<b>No GPU telemetry on this machine</b>, so nobody can be seen holding VRAM. "
        "CPU runs use host RAM (below).");
  }
  for (const telemetry::UnavailableProvider& u : unavailable) {
    sources << tr("%1 unavailable: %2")
                   .arg(QString::fromStdString(u.name), QString::fromStdString(u.reason));
  }
  diagnosis_->setText(diagnosis.join(QStringLiteral("<br><br>")));
  sources_->setText(sources.join(QLatin1Char('\n')));
}

QString ProcessesPage::diagnosisText() const {
  return diagnosis_->text();
}

}  // namespace lorascope::app
