// test_json_reader.cpp — the strict JSON reader: each type and range refused with the field's
// path, unknown keys named, and the document's own error thrown.
#include "TestRunner.h"

#include <cmath>
#include <string>

#include "common/JsonReader.h"

using namespace lorascope;
using nlohmann::json;

namespace {

class DocumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void throwDocumentError(const std::string& message) {
  throw DocumentError(message);
}

// The message a read throws as the document's error, "" when it does not throw.
template <typename F>
std::string failureOf(F&& read) {
  try {
    read();
  } catch (const DocumentError& e) {
    return e.what();
  }
  return "";
}

enum class Colour { Red, Green };
constexpr common::EnumName<Colour> kColours[] = {{Colour::Red, "red"}, {Colour::Green, "green"}};

}  // namespace

TEST_CASE(fieldsAreReadAsTheTypeTheyMustHave) {
  const json doc =
      json::parse(R"({"name": "n", "on": true, "count": -3, "big": 18446744073709551615,
      "rate": 0.5, "whole": 2, "loss": null, "colour": "green", "inner": {"x": 1}})");
  const common::JsonReader r(doc, "doc.json: ", throwDocumentError);
  COMPARE(r.string("name"), std::string("n"));
  COMPARE(r.boolean("on"), true);
  COMPARE(r.integer("count"), std::int64_t{-3});
  COMPARE(r.unsignedInteger("big"), std::uint64_t{18446744073709551615ull});
  COMPARE(r.number("rate"), 0.5);
  COMPARE(r.number("whole"), 2.0);  // a whole number is a number
  VERIFY(std::isnan(r.numberOrNaN("loss")));
  COMPARE(r.choice("colour", kColours), Colour::Green);
  COMPARE(r.object("inner").integer("x"), std::int64_t{1});
  COMPARE(r.integer("count", -5, 5), std::int64_t{-3});
  COMPARE(r.stringOr("absent", "fallback"), std::string("fallback"));
  COMPARE(r.integerOr("absent", 7), std::int64_t{7});
  VERIFY(!r.optionalNumber("loss").has_value() && !r.optionalNumber("absent").has_value());
  COMPARE(r.optionalNumber("rate"), std::optional<double>(0.5));
}

TEST_CASE(eachRefusalNamesTheDocumentTheFieldAndTheProblem) {
  const json doc =
      json::parse(R"({"name": 3, "on": "yes", "count": 1.5, "big": 18446744073709551615,
      "rate": "fast", "colour": "blue", "inner": {"micro_batch": 0}, "list": [1, {"a": 1}],
      "neg": -1})");
  const common::JsonReader r(doc, "doc.json: ", throwDocumentError);
  COMPARE(failureOf([&] { r.string("name"); }), std::string("doc.json: name: must be a string"));
  COMPARE(failureOf([&] { r.boolean("on"); }), std::string("doc.json: on: must be true or false"));
  COMPARE(failureOf([&] { r.integer("count"); }),
          std::string("doc.json: count: must be a whole number"));
  COMPARE(failureOf([&] { r.integer("big"); }), std::string("doc.json: big: too large"));
  COMPARE(failureOf([&] { r.number("rate"); }), std::string("doc.json: rate: must be a number"));
  COMPARE(failureOf([&] { r.string("gone"); }), std::string("doc.json: gone: missing"));
  COMPARE(failureOf([&] { r.choice("colour", kColours); }),
          std::string("doc.json: colour: 'blue' is not one of: red, green"));
  COMPARE(failureOf([&] { r.object("inner").integer("micro_batch", 1, 4096); }),
          std::string("doc.json: inner.micro_batch: must be a whole number from 1 to 4096"));
  COMPARE(failureOf([&] { r.integer("big", 0, 10); }),
          std::string("doc.json: big: must be a whole number from 0 to 10"));
  COMPARE(failureOf([&] { r.unsignedInteger("neg"); }),
          std::string("doc.json: neg: must be a whole number ≥ 0"));
  COMPARE(failureOf([&] { r.object("name"); }), std::string("doc.json: name: must be an object"));
  COMPARE(failureOf([&] { r.element("list", 0); }),
          std::string("doc.json: list[0]: must be an object"));
  COMPARE(failureOf([&] { r.element("list", 1).string("a"); }),
          std::string("doc.json: list[1].a: must be a string"));
  COMPARE(failureOf([&] { r.array("name"); }), std::string("doc.json: name: must be an array"));
  // A default covers an absent key only: one that is there must still be right.
  COMPARE(failureOf([&] { r.stringOr("name", "x"); }),
          std::string("doc.json: name: must be a string"));
}

TEST_CASE(rowsAreReadByPosition) {
  const json doc = json::parse(R"({"sites": [[3, "q", 18446744073709551615], [1, 2]]})");
  const common::JsonReader r(doc, "state: ", throwDocumentError);
  const common::JsonRow site = r.row("sites", 0);
  COMPARE(site.size(), std::size_t{3});
  COMPARE(site.integer(0), std::int64_t{3});
  COMPARE(site.string(1), std::string("q"));
  COMPARE(site.unsignedInteger(2), std::uint64_t{18446744073709551615ull});
  COMPARE(failureOf([&] { site.integer(1); }),
          std::string("state: sites[0][1]: must be a whole number"));
  COMPARE(failureOf([&] { site.integer(2); }), std::string("state: sites[0][2]: too large"));
  COMPARE(failureOf([&] { r.row("sites", 1).integer(2); }),
          std::string("state: sites[1][2]: missing"));
  COMPARE(failureOf([&] { r.row("sites", 1).integer(1, 3, 4); }),
          std::string("state: sites[1][1]: must be a whole number from 3 to 4"));
  COMPARE(failureOf([&] { r.row("sites", 2); }), std::string("state: sites: has no element 2"));
  COMPARE(failureOf([&] { r.element("sites", 0); }),
          std::string("state: sites[0]: must be an object"));
}

TEST_CASE(unknownKeysAreRefusedAndShownSafely) {
  const json doc = json::parse(R"({"name": "n", "colour": 1, "x\ny": 2})");
  const common::JsonReader r(doc, "doc.json: ", throwDocumentError);
  COMPARE(failureOf([&] {
            r.onlyKeys({"name", "colour", "size"});
          }),
          std::string(R"(doc.json: "x\ny": unknown key (the keys here: name, colour, size))"));
  const json inner = json::parse(R"({"inner": {"colour": 1}})");
  COMPARE(
      failureOf([&] {
        common::JsonReader(inner, "doc.json: ", throwDocumentError).object("inner").onlyKeys({"a"});
      }),
      std::string("doc.json: inner.colour: unknown key (the keys here: a)"));
}

TEST_CASE(aDocumentThatIsNoObjectIsRefusedAndTheDefaultErrorIsJsonError) {
  const json array = json::parse("[1, 2]");
  COMPARE(failureOf([&] { common::JsonReader(array, "doc.json: ", throwDocumentError); }),
          std::string("doc.json: must be an object"));
  const json doc = json::parse(R"({"n": "1"})");
  VERIFY_THROWS_EXCEPTION(common::JsonError, common::JsonReader(doc, "").integer("n"));
}
