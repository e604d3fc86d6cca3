// test_enum_names.cpp — common/EnumNames.h: one table gives both directions, unknown text is
// nothing (not a default value), the list for error messages, and coversEnum catching a table
// that skips or reorders a value.
#include <QtTest>

#include "common/EnumNames.h"

using namespace lorascope::common;

namespace {

enum class Colour { Red, Green, Blue, Count };
constexpr EnumName<Colour> kColourNames[] = {
    {Colour::Red, "red"}, {Colour::Green, "green"}, {Colour::Blue, "blue"}};
static_assert(coversEnum(kColourNames));
static_assert(std::size(kColourNames) == static_cast<std::size_t>(Colour::Count));

constexpr EnumName<Colour> kMissingGreen[] = {{Colour::Red, "red"}, {Colour::Blue, "blue"}};
constexpr EnumName<Colour> kReordered[] = {
    {Colour::Green, "green"}, {Colour::Red, "red"}, {Colour::Blue, "blue"}};
static_assert(!coversEnum(kMissingGreen));
static_assert(!coversEnum(kReordered));

}  // namespace

class TestEnumNames : public QObject {
  Q_OBJECT

 private slots:
  void namesAndParsesFromOneTable() {
    for (const EnumName<Colour>& entry : kColourNames) {
      QCOMPARE(enumName(kColourNames, entry.value), entry.name);
      QCOMPARE(parseEnum(kColourNames, entry.name), std::optional<Colour>(entry.value));
    }
  }

  void unknownTextIsNothingAndUnlistedValueIsQuestionMark() {
    QCOMPARE(parseEnum(kColourNames, "purple"), std::optional<Colour>());
    QCOMPARE(parseEnum(kColourNames, "Red"), std::optional<Colour>());  // exact spelling only
    QCOMPARE(parseEnum(kColourNames, ""), std::optional<Colour>());
    QCOMPARE(std::string(enumName(kMissingGreen, Colour::Green)), std::string("?"));
  }

  void listsTheAcceptedNames() {
    QCOMPARE(enumNameList(kColourNames), std::string("red, green, blue"));
    QCOMPARE(enumNameList(kColourNames, "|"), std::string("red|green|blue"));
  }
};

QTEST_APPLESS_MAIN(TestEnumNames)
#include "test_enum_names.moc"
