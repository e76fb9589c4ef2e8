// The Jinja interpreter (pipeline/text/jinja) against jinja2: every case of
// testdata/jinja_cases.json (jinja2 3.1.6's renderings, configured as
// transformers configures it; test_chat_templates.py re-checks the file
// against jinja2) renders byte for byte the same, or fails where jinja2 fails.
// Then what jinja2 has no opinion on: our errors name the construct and
// position, and adversarial input fails cleanly instead of recursing or
// running away.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/text/jinja/parser.h"
#include "pipeline/text/jinja/py_string.h"
#include "pipeline/text/jinja/render.h"
#include "pipeline/text/jinja/value.h"

namespace troupe::jinja {
namespace {

Dict Variables(const nlohmann::ordered_json& vars) {
  Dict out;
  for (const auto& [k, v] : vars.items()) out.emplace_back(k, Value::FromJson(v));
  out.emplace_back("raise_exception", Value::MakeFunction("raise_exception", [](const Args& a) -> Result<Value> {
                     return Status::InvalidArgument("raised: " + a.positional.at(0).Str());
                   }));
  return out;
}

Result<std::string> RenderSource(const std::string& source, const nlohmann::ordered_json& vars = {}) {
  TROUPE_ASSIGN_OR_RETURN(Template t, Parse(source));
  return Render(t, Variables(vars.is_null() ? nlohmann::ordered_json::object() : vars));
}

TEST(JinjaTest, MatchesJinja2OnEveryCase) {
  const std::string path = std::string(TROUPE_SOURCE_DIR) + "/tests/pipeline/text/testdata/jinja_cases.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
  ASSERT_GE(doc["cases"].size(), 50u);
  int errors = 0;
  for (const auto& c : doc["cases"]) {
    const std::string source = c["template"];
    Result<std::string> out = RenderSource(source, c["variables"]);
    if (c.contains("error")) {
      ++errors;
      EXPECT_FALSE(out.ok()) << source << "\njinja2 fails with " << c["error"] << ", we render: " << out.value();
      continue;
    }
    ASSERT_TRUE(out.ok()) << source << "\n" << out.status().ToString();
    EXPECT_EQ(*out, c["expected"].get<std::string>()) << source;
  }
  EXPECT_GE(errors, 5);
}

TEST(JinjaTest, RaiseExceptionKeepsItsMessage) {
  Result<std::string> out = RenderSource("{% if true %}{{ raise_exception('roles must alternate') }}{% endif %}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("raised: roles must alternate"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("line 1, column 17"), std::string::npos) << out.status().message();
}

TEST(JinjaTest, UnsupportedConstructsAreNamedWithTheirPosition) {
  struct Case {
    const char* source;
    const char* construct;
    const char* position;
  };
  const Case cases[] = {
      {"{% include 'x.jinja' %}", "'include' statement", "line 1, column 1"},
      {"a\n{% extends 'base' %}", "'extends' statement", "line 2, column 1"},
      {"{% raw %}{{ x }}{% endraw %}", "'raw' statement", "line 1, column 1"},
      {"{% for x in y recursive %}{% endfor %}", "recursive for loop", "line 1, column 15"},
      {"\n\n  {{ x | wordwrap(3) }}", "filter 'wordwrap'", "line 3, column 8"},
      {"{% if x is lower %}{% endif %}", "test 'lower'", "line 1, column 9"},
      {"{{ f(*args) }}", "*args", "line 1, column 6"},
  };
  for (const Case& c : cases) {
    Result<Template> t = Parse(c.source);
    ASSERT_FALSE(t.ok()) << c.source;
    EXPECT_EQ(t.status().code(), StatusCode::kUnsupported) << c.source << ": " << t.status().ToString();
    EXPECT_NE(t.status().message().find(c.construct), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find(c.position), std::string::npos) << t.status().message();
  }
  // A method outside the subset is found only when it runs.
  Result<std::string> out = RenderSource("{{ s.zfill(5) }}", {{"s", "1"}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported) << out.status().ToString();
  EXPECT_NE(out.status().message().find("'zfill'"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("line 1, column 4"), std::string::npos) << out.status().message();
}

TEST(JinjaTest, SyntaxErrorsAreInvalidArgumentWithPosition) {
  for (const char* source : {"{{ x ", "{% if x %}", "{% for %}", "{{ 'abc }}", "{{ x + }}", "{% endif %}",
                             "{% if x %}{% endfor %}", "{{ a b }}", "{# open", "{{ $ }}", "{% set %}"}) {
    Result<Template> t = Parse(source);
    ASSERT_FALSE(t.ok()) << source;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << source << ": " << t.status().ToString();
    EXPECT_NE(t.status().message().find("line 1, column"), std::string::npos) << t.status().message();
  }
}

TEST(JinjaTest, DeepNestingFailsInsteadOfRecursing) {
  const std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
  Result<Template> t = Parse("{{ " + parens + " }}");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nests deeper"), std::string::npos) << t.status().message();
  std::string ifs;
  for (int i = 0; i < 10000; ++i) ifs += "{% if x %}";
  t = Parse(ifs);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nests deeper"), std::string::npos) << t.status().message();
  std::string nots = "{{ ";
  for (int i = 0; i < 100000; ++i) nots += "not ";
  t = Parse(nots + "x }}");
  ASSERT_FALSE(t.ok());
  // Within the limit, it parses and renders.
  Result<std::string> ok = RenderSource("{{ " + std::string(20, '(') + "1" + std::string(20, ')') + " }}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "1");
}

TEST(JinjaTest, RunawayTemplatesHitTheirBounds) {
  Result<std::string> out = RenderSource("{% for i in range(1000000000) %}{% endfor %}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange) << out.status().ToString();
  out = RenderSource(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(10) %}{% endfor %}"
      "{% endfor %}{% endfor %}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange) << out.status().ToString();
  out = RenderSource("{{ 'x' * 100000000 }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange) << out.status().ToString();
  out = RenderSource("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange) << out.status().ToString();
  out = RenderSource("{{ 9223372036854775807 + 1 }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange) << out.status().ToString();
}

TEST(JinjaTest, ArbitraryBytesNeverCrash) {
  // Every prefix of a real template, and byte soup made of Jinja's own tokens:
  // each either parses and renders or fails with a message.
  const std::string real =
      "{%- if messages[0]['role'] == 'system' %}{% set ns = namespace(x=1) %}{%- for m in messages[1:] %}"
      "{{- '<|im_start|>' + m.role | trim ~ '\\n' }}{% if loop.last %}{{ m.content[::-1] }}{% endif %}"
      "{%- endfor %}{% endif %}{# c #}";
  nlohmann::ordered_json vars = {
      {"messages", {{{"role", "system"}, {"content", "s"}}, {{"role", "u"}, {"content", "c"}}}}};
  for (size_t n = 0; n <= real.size(); ++n) {
    Result<std::string> out = RenderSource(real.substr(0, n), vars);
    if (!out.ok()) EXPECT_FALSE(out.status().message().empty());
  }
  const char* pieces[] = {"{{", "}}", "{%", "%}", "{#", "#}", "-",   "+",  "'",     "\"",     "(",
                          ")",  "[",  "]",  "{",  "}",  "if", "for", "in", "endif", "endfor", "set",
                          "=",  ".",  "|",  "x",  " ",  "\n", "\\",  "1",  ":"};
  uint32_t state = 12345;
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    for (int k = 0; k < 20; ++k) {
      state = state * 1103515245u + 12345u;
      s += pieces[(state >> 16) % (sizeof pieces / sizeof *pieces)];
    }
    Result<std::string> out = RenderSource(s, vars);
    if (!out.ok()) EXPECT_FALSE(out.status().message().empty());
  }
}

TEST(PyStringTest, PythonSemantics) {
  EXPECT_EQ(py::Length("h\xc3\xa9llo\xf0\x9f\x98\x80"), 6u);
  EXPECT_EQ(py::Strip("\xc2\xa0 x \xe3\x80\x80", std::nullopt, true, true), "x");
  EXPECT_EQ(py::Strip("\x1e\x1emark\x1e", std::nullopt, true, true), "mark");  // \x1e is Python whitespace
  EXPECT_EQ(py::Strip("xxaxx", std::string("x"), true, false), "axx");
  EXPECT_EQ(py::Split("  a  b ", std::nullopt, -1), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(py::Split("a,b,,c", std::string(","), 2), (std::vector<std::string>{"a", "b", ",c"}));
  EXPECT_EQ(py::Title("hello wORLD 2nd"), "Hello World 2Nd");
  EXPECT_EQ(py::Replace("ab", "", "-", -1), "-a-b-");
}

TEST(ValueTest, PythonPrinting) {
  EXPECT_EQ(FloatRepr(0.1), "0.1");
  EXPECT_EQ(FloatRepr(1.0), "1.0");
  EXPECT_EQ(FloatRepr(1e16), "1e+16");
  EXPECT_EQ(FloatRepr(123456789.0), "123456789.0");
  EXPECT_EQ(FloatRepr(0.0001), "0.0001");
  EXPECT_EQ(FloatRepr(0.00001), "1e-05");
  EXPECT_EQ(FloatRepr(-2.5), "-2.5");
  EXPECT_EQ(Value::String("it's").Repr(), "\"it's\"");
  EXPECT_EQ(Value::MakeTuple({Value::Int(1)}).Repr(), "(1,)");
  EXPECT_EQ(
      Value::FromJson(nlohmann::ordered_json::parse(R"({"b": 1, "a": [true, null, 1.5, "\u00e9"]})")).ToJson().value(),
      "{\"b\": 1, \"a\": [true, null, 1.5, \"\xc3\xa9\"]}");
}

}  // namespace
}  // namespace troupe::jinja
