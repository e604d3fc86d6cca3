// gui/RunSetupPage.h — the run setup page: what to train (the built-in demo, or a model folder and
// a dataset file), where the run folder goes, the LoRA and training settings, the device and the
// profile. It produces the start command's config (EngineJob's schema: "demo" or "model" and
// "data", "out", and "options" named as `lorascope-train train`'s options).
//
// Choosing a model folder inspects it (architecture, parameter count, the memory LoRA training
// needs at these settings); choosing a dataset validates it with the model's tokenizer (counts,
// issues, the token-length histogram). Both run on a thread of their own with progress, and a
// result that arrives after the choice changed again is dropped. The settings' editors are a form
// over the settings registry (gui/SettingsForm.h): one per setting, grouped as the registry groups
// them, with its range, default, help and the live/restart mark. Errors are shown on the page and
// listed by problems(); Start stays disabled while there are any. The values are remembered
// (QSettings "setup/"); the first start preselects the demo, so one click trains something.
#pragma once

#include <QMap>
#include <QWidget>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/ValidationReport.h"
#include "model/ModelConfig.h"
#include "model/ModelLayout.h"  // defines: ParameterCounts
#include "profiles/Profile.h"   // defines: LiveToggles

class QComboBox;
class QFormLayout;
class QGridLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QRadioButton;
class QResizeEvent;
class QSpinBox;

namespace lorascope::widgets {
class LengthHistogram;
}  // namespace lorascope::widgets

namespace lorascope::app {

// What opening a model folder found (or why it failed).
struct ModelInspection {
  QString dir;
  std::optional<model::ModelConfig> config;
  std::uint64_t weightBytes = 0;
  model::ParameterCounts parameters;
  QString error;
  // With --quantize nf4 (model::placedWeightBytes): on a GPU (the rest bf16) and on the CPU.
  std::uint64_t nf4GpuWeightBytes = 0;
  std::uint64_t nf4CpuWeightBytes = 0;
};

// What validating a dataset found (or why it could not be read).
struct DatasetValidation {
  QString file;
  std::optional<data::ValidationReport> report;
  QString error;
};

class CommandSetup;
class SettingsForm;

class RunSetupPage : public QWidget {
  Q_OBJECT

 public:
  explicit RunSetupPage(QWidget* parent = nullptr);

  // The start command's config with a new run folder under the output folder; nullopt while
  // problems() is not empty.
  std::optional<nlohmann::json> runConfig() const;
  // "Run a command" is chosen: Start supervises the command of commandSetup() instead of
  // training (gui/CommandSetup.h, `lorascope-train supervise`).
  bool usesCommand() const;
  void setCommandMode(bool on);
  CommandSetup* commandSetup() const { return commandSetup_; }
  QString effectiveModelDir() const;  // the demo's cache folder or the chosen one
  // lorascope-train (default: beside this program), whose `demo` command writes the built-in
  // demo into the cache and names it: the demo base is the trainer's to assemble, and the window
  // links no trainer. Setting it inspects the demo again when it is chosen.
  void setTrainProgram(const QString& program);
  QStringList problems() const;
  // Options as `lorascope-train train` takes them (long name → text).
  std::map<std::string, std::string> options() const;

  bool usesDemo() const;
  bool isBusy() const { return inspecting_ || validating_; }  // work in flight
  const ModelInspection& inspection() const { return inspection_; }
  const DatasetValidation& validation() const { return validation_; }
  QString modelSummary() const;
  QString datasetSummary() const;
  // Every issue of the dataset, one a line as `lorascope-train validate-data` lists them.
  QString datasetIssuesText() const;
  // Non-empty when max_seq_len exceeds the model's max_position_embeddings (a warning).
  QString sequenceLengthWarning() const;
  QString memoryEstimateText() const;
  widgets::LengthHistogram* histogram() const { return histogram_; }
  // The editor of a run option (nullptr for an unknown name).
  QWidget* editor(const std::string& option) const;
  QLineEdit* runNameEditor() const { return runName_; }
  QSpinBox* maxStepsEditor() const { return spinBox("steps"); }
  QSpinBox* microBatchEditor() const { return spinBox("batch-size"); }
  QSpinBox* seqLenEditor() const { return spinBox("max-seq-len"); }
  QSpinBox* checkpointEveryEditor() const { return spinBox("checkpoint-every"); }

  // GPUs this build can see (listed, but the CPU build trains on the CPU only).
  void setDevices(const QStringList& gpus, bool canTrainOnGpu);
  // Why this engine cannot form a group of GPUs (its hello's no_collective_reason: the cpu
  // flavour, Windows, no NCCL/RCCL), "" when it can: the GPUs field is then cleared and disabled,
  // the reason its tooltip.
  void setGroupUnavailable(const QString& reason);
  // The profiles to choose from; for each what it sets over the options ("sets micro-batch 1,
  // …"), shown under the choice, and its toggles, which the memory estimate follows.
  void setProfiles(const QStringList& names, const QString& current,
                   const QMap<QString, QString>& notes = {},
                   const QMap<QString, profiles::LiveToggles>& toggles = {});
  // The profile the next run starts with: the profile bar's choice too (gui/MainWindow.h).
  QString profileName() const;
  void setProfile(const QString& name);  // remembered; emits changed(), not profileChosen()
  QString profileNote() const;
  void saveSettings() const;

 public slots:
  void setDemo(bool demo);  // also applies that source's default settings
  void setModelDir(const QString& dir);
  void setDataFile(const QString& file);
  void setOutputDir(const QString& dir);
  void restoreDefaults();

 public:
  // The folder runs go to (each gets a folder of its own in it); the runs page lists it.
  QString outputDir() const;

 signals:
  void changed();  // the config or the problems may differ
  void profileChosen(const QString& name);

 private:
  void buildSourceBox(QGridLayout* grid);
  void placeBoxes(bool twoColumns);
  void resizeEvent(QResizeEvent* event) override;
  QSpinBox* spinBox(const std::string& option) const;
  void restoreSettings();
  void inspectModel();
  void validateDataset();
  void showInspection();
  void showValidation();
  void updateEstimate();
  void updateProblems();
  void showTrainingRows(bool visible);
  void updateProfileNote();

  QGridLayout* columns_ = nullptr;
  QFormLayout* sourceForm_ = nullptr;
  std::vector<QWidget*> trainingRows_;  // model, dataset and estimate: not a command's
  std::array<QWidget*, 2> boxes_{};     // what to train, the options
  bool twoColumns_ = true;
  ModelInspection inspection_;
  DatasetValidation validation_;
  bool inspecting_ = false;
  bool validating_ = false;
  QString trainProgram_;       // lorascope-train: the demo's files (setTrainProgram)
  int inspectGeneration_ = 0;  // a result from an older generation is stale
  int validateGeneration_ = 0;

  QRadioButton* demo_;
  QRadioButton* own_;
  QRadioButton* command_;
  CommandSetup* commandSetup_;
  QLineEdit* modelEdit_;
  QLabel* modelInfo_;
  QLineEdit* dataEdit_;
  QLabel* dataInfo_;
  QPlainTextEdit* dataIssues_;
  QProgressBar* progress_;
  widgets::LengthHistogram* histogram_;
  QLineEdit* outputEdit_;
  QLineEdit* runName_;
  SettingsForm* form_ = nullptr;  // the options column
  QLabel* effectiveBatch_ = nullptr;
  QComboBox* profile_ = nullptr;
  QLabel* profileNote_ = nullptr;
  QMap<QString, QString> profileNotes_;
  QMap<QString, profiles::LiveToggles> profileToggles_;
  QLabel* estimate_;
  QLabel* problems_;
};

}  // namespace lorascope::app
