// gui/SettingsForm.cpp — editors made from the settings registry, and their values as text.
#include "gui/SettingsForm.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "settings/Registry.h"  // defines: registry, Setting

namespace lorascope::app {

namespace {

// The editor of a real-valued option: shows the value as a number the command line takes
// (2e-4 as 0.0002, 1e-9 as 1e-09), accepts what its parser accepts, and steps by ×2 / ÷2 over a
// range that spans decades (the learning rate, alpha, the gradient norm) or by a hundredth of the
// range elsewhere (dropout, weight decay).
class RealSpinBox : public QDoubleSpinBox {
 public:
  RealSpinBox(double min, double max) {
    setDecimals(12);  // QDoubleSpinBox rounds values to its decimals: 1e-9 must survive
    setRange(min, max);
    setAccelerated(true);
    logarithmic_ = max >= 1000 * (min > 0 ? min : 1.0);
    const double step = (max - min) / 100;
    setSingleStep(logarithmic_ ? 1.0 : std::pow(10.0, std::round(std::log10(step))));
  }
  QString textFromValue(double value) const override { return QString::number(value, 'g', 6); }
  double valueFromText(const QString& text) const override { return text.trimmed().toDouble(); }
  QValidator::State validate(QString& text, int& /*pos*/) const override {
    bool ok = false;
    const double value = text.trimmed().toDouble(&ok);
    if (!ok) {
      // Half-typed numbers ("", "-", "1e", "2.") may still become one.
      static const QRegularExpression partial(QStringLiteral("^\\s*-?[0-9]*\\.?[0-9]*(e-?)?$"));
      return partial.match(text).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
    }
    return value >= minimum() && value <= maximum() ? QValidator::Acceptable
                                                    : QValidator::Intermediate;
  }
  void stepBy(int steps) override {
    if (!logarithmic_) {
      QDoubleSpinBox::stepBy(steps);
      return;
    }
    const double from = value() > 0 ? value() : singleStep();
    setValue(std::clamp(from * std::pow(2.0, steps), minimum(), maximum()));
  }

 private:
  bool logarithmic_ = false;
};

const settings::Setting& settingOf(const std::string& option) {
  return *settings::registry().find(option);
}

}  // namespace

SettingsForm::SettingsForm(const std::map<std::string, QWidget*>& custom, QWidget* parent)
    : QWidget(parent), custom_(custom) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  std::vector<std::string> groups;
  for (const settings::Setting& setting : settings::registry().all()) {
    if (std::find(groups.begin(), groups.end(), setting.group) == groups.end()) {
      groups.push_back(setting.group);
    }
  }
  for (const std::string& group : groups) {
    auto* box = new QGroupBox(QString::fromStdString(group));
    auto* form = new QFormLayout(box);
    for (const settings::Setting& setting : settings::registry().all()) {
      if (setting.group != group) {
        continue;
      }
      const std::string& name = setting.option.name;
      QWidget* editor = buildEditor(name);
      if (setting.option.type == settings::OptionType::Bool && !custom_.count(name)) {
        form->addRow(editor);  // the check box carries the label
      } else {
        form->addRow(QString::fromStdString(setting.label), editor);
      }
      formOf_[name] = form;
    }
    column->addWidget(box);
  }
}

QWidget* SettingsForm::buildEditor(const std::string& name) {
  const settings::Setting& setting = settingOf(name);
  const settings::OptionSpec& spec = setting.option;
  QString tip = QString::fromStdString(spec.help);
  if (setting.apply == settings::Apply::Live) {
    tip += tr(" Live: the Controls dock changes it during a run.");
  }
  QWidget* editor = nullptr;
  if (const auto it = custom_.find(name); it != custom_.end()) {
    editor = it->second;
  } else {
    switch (spec.type) {
      case settings::OptionType::Integer: {
        auto* box = new QSpinBox;
        box->setRange(static_cast<int>(spec.min) - (spec.special.empty() ? 0 : 1),
                      static_cast<int>(std::min<double>(spec.max, INT_MAX)));
        box->setAccelerated(true);
        if (!spec.special.empty()) {
          box->setSpecialValueText(QString::fromStdString(spec.special));  // min − 1: "auto"
        } else if (!spec.zeroMeans.empty() && spec.min == 0) {
          box->setSpecialValueText(QString::fromStdString(spec.zeroMeans));
        }
        connect(box, &QSpinBox::valueChanged, this, &SettingsForm::edited);
        editor = box;
        break;
      }
      case settings::OptionType::Real: {
        auto* box = new RealSpinBox(spec.min, spec.max);
        if (!spec.zeroMeans.empty() && spec.min == 0) {
          box->setSpecialValueText(QString::fromStdString(spec.zeroMeans));
        }
        connect(box, &QDoubleSpinBox::valueChanged, this, &SettingsForm::edited);
        editor = box;
        break;
      }
      case settings::OptionType::Text: {
        auto* edit = new QLineEdit;
        connect(edit, &QLineEdit::textChanged, this, &SettingsForm::edited);
        editor = edit;
        break;
      }
      case settings::OptionType::Bool: {
        auto* check = new QCheckBox(QString::fromStdString(setting.label));
        connect(check, &QCheckBox::toggled, this, &SettingsForm::edited);
        editor = check;
        break;
      }
      case settings::OptionType::Choice: {
        auto* combo = new QComboBox;
        for (const std::string& choice : spec.choices) {
          combo->addItem(QString::fromStdString(choice), QString::fromStdString(choice));
        }
        connect(combo, &QComboBox::currentIndexChanged, this, &SettingsForm::edited);
        editor = combo;
        break;
      }
      case settings::OptionType::List: {
        editor = new QWidget;
        auto* grid = new QGridLayout(editor);
        grid->setContentsMargins(0, 0, 0, 0);
        int column = 0;
        for (const std::string& item : spec.choices) {
          auto* check = new QCheckBox(QString::fromStdString(item));
          listItems_[name + "/" + item] = check;
          grid->addWidget(check, column / 4, column % 4);
          ++column;
          connect(check, &QCheckBox::toggled, this, &SettingsForm::edited);
        }
        break;
      }
    }
  }
  editor->setToolTip(tip);
  editor->setObjectName(QString::fromStdString(name));
  editors_[name] = editor;
  return editor;
}

QWidget* SettingsForm::editor(const std::string& option) const {
  const auto it = editors_.find(option);
  return it == editors_.end() ? nullptr : it->second;
}

QSpinBox* SettingsForm::spinBox(const std::string& option) const {
  return qobject_cast<QSpinBox*>(editor(option));
}

void SettingsForm::addRowBelow(const std::string& option, const QString& label, QWidget* widget) {
  QFormLayout* form = formOf_.at(option);
  int row = -1;
  QFormLayout::ItemRole role{};
  form->getWidgetPosition(editor(option), &row, &role);
  form->insertRow(row + 1, label, widget);
}

std::string SettingsForm::text(const std::string& name) const {
  const settings::OptionSpec& spec = settingOf(name).option;
  QWidget* w = editor(name);
  if (spec.type == settings::OptionType::List) {
    std::string items;
    for (const std::string& item : spec.choices) {
      if (listItems_.at(name + "/" + item)->isChecked()) {
        items += (items.empty() ? "" : ",") + item;
      }
    }
    return items;
  }
  if (auto* box = qobject_cast<QSpinBox*>(w)) {
    const bool special = !spec.special.empty() && box->value() == box->minimum();
    return special ? spec.special : std::to_string(box->value());
  }
  if (auto* real = qobject_cast<QDoubleSpinBox*>(w)) {
    return QString::number(real->value(), 'g', 10).toStdString();
  }
  if (auto* check = qobject_cast<QCheckBox*>(w)) {
    return check->isChecked() ? "true" : "false";
  }
  if (auto* combo = qobject_cast<QComboBox*>(w)) {
    const std::string value = combo->currentData().toString().toStdString();
    return value.empty() ? spec.defaultText : value;  // nothing to choose from yet: the default
  }
  return qobject_cast<QLineEdit*>(w)->text().trimmed().toStdString();
}

void SettingsForm::setText(const std::string& name, const std::string& text) {
  if (custom_.count(name) != 0) {
    return;
  }
  const settings::OptionSpec& spec = settingOf(name).option;
  QWidget* w = editor(name);
  const QString value = QString::fromStdString(text);
  if (spec.type == settings::OptionType::List) {
    const QStringList chosen = value.split(QLatin1Char(','));
    for (const std::string& item : spec.choices) {
      listItems_.at(name + "/" + item)->setChecked(chosen.contains(QString::fromStdString(item)));
    }
  } else if (auto* box = qobject_cast<QSpinBox*>(w)) {
    box->setValue(!spec.special.empty() && text == spec.special ? box->minimum() : value.toInt());
  } else if (auto* real = qobject_cast<QDoubleSpinBox*>(w)) {
    real->setValue(value.toDouble());
  } else if (auto* check = qobject_cast<QCheckBox*>(w)) {
    check->setChecked(text == "true");
  } else if (auto* combo = qobject_cast<QComboBox*>(w)) {
    const int index = combo->findData(value);
    combo->setCurrentIndex(index >= 0 ? index : 0);
  } else {
    qobject_cast<QLineEdit*>(w)->setText(value);
  }
}

std::map<std::string, std::string> SettingsForm::values() const {
  std::map<std::string, std::string> out;
  for (const settings::Setting& setting : settings::registry().all()) {
    out[setting.option.name] = text(setting.option.name);
  }
  return out;
}

void SettingsForm::setDefaults(bool demo) {
  for (const settings::Setting& setting : settings::registry().all()) {
    setText(setting.option.name, setting.defaultFor(demo));
  }
}

void SettingsForm::restore(const QVariantMap& saved) {
  for (const settings::Setting& setting : settings::registry().all()) {
    const QString key = QString::fromStdString(setting.option.name);
    if (!saved.contains(key)) {
      continue;
    }
    const std::string value = saved.value(key).toString().toStdString();
    try {
      // As parsed: a value saved before the option grew choices ("true" for --packing) is shown
      // as the choice it now means.
      setText(setting.option.name,
              settings::optionText(settings::parseOptionValue(setting.option, value)));
    } catch (const settings::UsageError&) {
    }
  }
}

QStringList SettingsForm::problems() const {
  QStringList out;
  for (const settings::Setting& setting : settings::registry().all()) {
    try {
      settings::parseOptionValue(setting.option, text(setting.option.name));
    } catch (const settings::UsageError& e) {
      out << tr("%1: %2").arg(QString::fromStdString(setting.label), QString::fromUtf8(e.what()));
    }
  }
  return out;
}

}  // namespace lorascope::app
