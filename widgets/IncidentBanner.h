// widgets/IncidentBanner.h — the band across the top of the dashboard that says, in words, what
// went wrong in the run shown: each hang, out-of-memory, crash, restart or other error, and each
// request the engine refused, with its step and what was done about it. The newest kShown are
// written out whole; the earlier ones are counted (Log and incidents lists them all). Hidden while
// the run has none; Dismiss hides it until the next one.
#pragma once

#include <QFrame>
#include <QString>
#include <vector>

class QLabel;
class QToolButton;

namespace lorascope::widgets {

class IncidentBanner : public QFrame {
  Q_OBJECT

 public:
  static constexpr int kShown = 2;

  // An incident stopped or restarted the run; a refusal left it as it was.
  enum class Severity { Incident, Refusal };
  struct Entry {
    Severity severity = Severity::Incident;
    QString headline;  // "Hang in step 5: no step for 10.5 s after step 4"
    QString detail;    // what the engine reported, what was done, what to try
  };

  explicit IncidentBanner(QWidget* parent = nullptr);

  void add(Entry entry);
  void clear();
  int count() const { return static_cast<int>(entries_.size()); }
  const std::vector<Entry>& entries() const { return entries_; }
  // The banner as shown, in plain text ("" while hidden).
  QString shownText() const;
  QToolButton* dismissButton() const { return dismiss_; }

 private:
  void relabel();

  std::vector<Entry> entries_;
  QLabel* text_;
  QToolButton* dismiss_;
};

}  // namespace lorascope::widgets
