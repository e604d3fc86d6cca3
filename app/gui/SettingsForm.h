// gui/SettingsForm.h — the Setup page's option column: a form over the settings registry
// (backend/settings/Registry.h). One group box per group of the registry, in its order; one editor
// per setting, made from its type (a spin box with its range, a number box, a check box, a choice,
// check boxes for a list, a line edit), with its help, range and the live mark as tooltip. The
// form reads and writes values as the command line writes them, fills in the defaults (the demo's
// or the options'), takes back saved values that still pass the registry's checks, and lists the
// values that do not.
//
// The page may hand in an editor of its own for a setting (the profile: a choice of the known
// profiles); the form places it and reads it, and leaves filling it to the page.
#pragma once

#include <QString>
#include <QStringList>
#include <QVariantMap>
#include <QWidget>
#include <map>
#include <string>

class QCheckBox;
class QFormLayout;
class QSpinBox;

namespace lorascope::app {

class SettingsForm : public QWidget {
  Q_OBJECT

 public:
  // `custom`: editors the page makes itself, by option name (the form takes ownership).
  explicit SettingsForm(const std::map<std::string, QWidget*>& custom = {},
                        QWidget* parent = nullptr);

  QWidget* editor(const std::string& option) const;  // nullptr for an unknown name
  QSpinBox* spinBox(const std::string& option) const;
  // A row the page adds under a setting's editor (the effective batch under the accumulation).
  void addRowBelow(const std::string& option, const QString& label, QWidget* widget);

  // The editor's value as the command line writes it ("8", "auto", "true", "q,k,v").
  std::string text(const std::string& option) const;
  // Sets an editor from such a text; custom editors are the page's to set.
  void setText(const std::string& option, const std::string& text);
  std::map<std::string, std::string> values() const;  // every setting, by option name

  void setDefaults(bool demo);
  // Sets the saved values that still pass their setting's checks (another version may have
  // saved a value this one's range excludes); the rest keep what they have.
  void restore(const QVariantMap& saved);
  // "Label: --name needs …" for each value the registry's checks refuse.
  QStringList problems() const;

 signals:
  void edited();  // a value changed

 private:
  QWidget* buildEditor(const std::string& option);

  std::map<std::string, QWidget*> editors_;      // by option name
  std::map<std::string, QWidget*> custom_;       // the page's editors
  std::map<std::string, QCheckBox*> listItems_;  // "targets/q": one box per list item
  std::map<std::string, QFormLayout*> formOf_;   // the group form an editor sits in
};

}  // namespace lorascope::app
