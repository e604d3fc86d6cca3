// gui/TryItPage.h — the "Try it" page: one prompt, two answers side by side, the base model's and
// the same model's with a trained adapter (a run folder or a PEFT folder), generated on a worker
// thread (job/Generation.h: chat template, KV cache, greedy or seeded sampling) and streamed into
// both panes as the tokens come; Stop ends the generation at the next token.
//
// The model and the adapter are loaded once and kept while they stay the same (the base answer
// runs the same weights with the adapter switched off). The page is told the current setup's
// model and the latest run folder (suggest()); fields the user edited are not overwritten.
// "Base weights" loads the base as stored or in NF4 as a QLoRA run trained on it (both answers
// use it); it follows what the adapter's run recorded (config.json's training.quantize) until
// the user picks one, which is then kept like the edited fields.
#pragma once

#include <QPointer>
#include <QWidget>
#include <atomic>
#include <memory>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QThread;

namespace lorascope::job {
class TextGenerator;
}

namespace lorascope::app {

class TryItPage : public QWidget {
  Q_OBJECT

 public:
  explicit TryItPage(QWidget* parent = nullptr);
  ~TryItPage() override;

  // The setup page's model folder and the newest run folder, unless the user typed others.
  void suggest(const QString& modelDir, const QString& runFolder);
  bool generating() const { return worker_ != nullptr; }
  // The fields as the user left them (QSettings group "tryit"): the prompt, the sampling knobs,
  // and the model and adapter folders where the user chose them. Saved at each Generate and when
  // the window closes; restored as the window opens.
  void restoreSettings();
  void saveSettings() const;

  QLineEdit* modelEdit() const { return model_; }
  QLineEdit* adapterEdit() const { return adapter_; }
  QPlainTextEdit* promptEdit() const { return prompt_; }
  QPlainTextEdit* baseAnswer() const { return baseAnswer_; }
  QPlainTextEdit* adapterAnswer() const { return adapterAnswer_; }
  // Under each pane: what an answer with nothing to see is ("128 line breaks and nothing else").
  QLabel* baseNote() const { return baseNote_; }
  QLabel* adapterNote() const { return adapterNote_; }
  QSpinBox* maxNewTokens() const { return maxNewTokens_; }
  QDoubleSpinBox* temperature() const { return temperature_; }
  QComboBox* baseWeights() const { return baseWeights_; }  // data: "none" or "nf4"
  QPushButton* generateButton() const { return generate_; }
  QPushButton* stopButton() const { return stop_; }
  QLabel* status() const { return status_; }

 public slots:
  void generate();
  void stop();
  // What the worker calls, in order, on this page's thread: each piece of an answer as it comes,
  // then the answer's end (its pane is checked for an answer that shows nothing).
  void append(bool adapter, const QString& piece);
  void answerEnded(bool adapter);

 signals:
  void finished();  // a generation ended (done, stopped or failed); status() says how

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;  // Ctrl+Return in the prompt

 private:
  void done(const QString& status);
  void updateButtons();
  void followAdapterRun();  // preselects the adapter's run's base weights unless chosen

  QLineEdit* model_;
  QLineEdit* adapter_;
  QLineEdit* system_;
  QPlainTextEdit* prompt_;
  QSpinBox* maxNewTokens_;
  QDoubleSpinBox* temperature_;
  QDoubleSpinBox* topP_;
  QSpinBox* seed_;
  QComboBox* device_;
  QComboBox* baseWeights_;
  QPushButton* generate_;
  QPushButton* stop_;
  QLabel* status_;
  QPlainTextEdit* baseAnswer_;
  QPlainTextEdit* adapterAnswer_;
  QLabel* baseNote_;
  QLabel* adapterNote_;
  bool modelEdited_ = false;
  bool adapterEdited_ = false;
  bool baseWeightsChosen_ = false;
  // The loaded generator and what it was loaded for; only the worker touches it while one runs.
  std::shared_ptr<job::TextGenerator> generator_;
  QString loadedKey_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QThread* worker_ = nullptr;
};

}  // namespace lorascope::app
