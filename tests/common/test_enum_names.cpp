// test_enum_names.cpp — common/EnumNames.h: one table gives both directions, unknown text is
// nothing (not a default value), the list for error messages, and coversEnum catching a table
// that skips or reorders a value.
#include "TestRunner.h"

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

TEST_CASE(namesAndParsesFromOneTable) {
  for (const EnumName<Colour>& entry : kColourNames) {
    COMPARE(enumName(kColourNames, entry.value), entry.name);
    COMPARE(parseEnum(kColourNames, entry.name), std::optional<Colour>(entry.value));
  }
}

TEST_CASE(unknownTextIsNothingAndUnlistedValueIsQuestionMark) {
  COMPARE(parseEnum(kColourNames, "purple"), std::optional<Colour>());
  COMPARE(parseEnum(kColourNames, "Red"), std::optional<Colour>());  // exact spelling only
  COMPARE(parseEnum(kColourNames, ""), std::optional<Colour>());
  COMPARE(std::string(enumName(kMissingGreen, Colour::Green)), std::string("?"));
}

TEST_CASE(listsTheAcceptedNames) {
  COMPARE(enumNameList(kColourNames), std::string("red, green, blue"));
  COMPARE(enumNameList(kColourNames, "|"), std::string("red|green|blue"));
}
