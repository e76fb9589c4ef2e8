"""Small Jinja templates that exercise one feature each, with the variables
they render with. tests/pipeline/text/testdata/jinja_cases.json holds them
with jinja2's output (configured as transformers configures it), and
test_chat_templates.py checks that file against jinja2 again; the C++ test
tests/pipeline/text/jinja_test.cpp checks our interpreter against the file.

    .venv/bin/python tests/python/jinja_cases.py   # rewrites the JSON file
"""
import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "pipeline" / "text" / "testdata" / "jinja_cases.json"

M = [{"role": "system", "content": "S"}, {"role": "user", "content": " u1 "},
     {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}]

CASES = [
    # Whitespace: trim_blocks, lstrip_blocks, '-' and '+', comments, trailing newline.
    ("{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("  {% if true %}\n  x\n  {% endif %}\n", {}),
    ("a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("a\n  {%+ if true %}b{% endif %}", {}),
    ("x {# comment #}\ny\n  {# own line #}\nz", {}),
    ("{{ 'a' }}\n{{ 'b' }}\n", {}),
    ("line\r\nwindows\rold mac\n", {}),
    ("{{- '  ' -}}  x  {{- ' ' }}", {}),
    # Literals and printing.
    ("{{ 1 }} {{ 1.5 }} {{ 2.0 }} {{ 1e3 }} {{ true }} {{ none }} {{ 'q' }} {{ \"d\" }}", {}),
    ("{{ [1, 'a', none, true] }} {{ {'k': 'v', 'n': 1} }} {{ (1, 2) }}", {}),
    ("{{ 'a\\nb\\t\\x41\\u00e9' }}|{{ 'it''s' }}|{{ \"mixed 'q'\" }}", {}),
    ("[{{ undefined_name }}] [{{ undefined_name | default('d') }}] [{{ '' | default('e', true) }}]", {}),
    # Arithmetic and strings.
    ("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 - 4 }}", {}),
    ("{{ 'ab' + 'cd' }} {{ 'x' ~ 1 ~ none }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 0.1 + 0.2 }}", {}),
    ("{{ -x }} {{ +x }} {{ x - 10 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", {"x": 5}),
    # Logic.
    ("{{ true and 'x' }} {{ false or 'y' }} {{ not none }} {{ 0 or '' or 'z' }} {{ 'a' in 'cat' }} {{ 3 not in [1, 2] }}",
     {}),
    ("{{ 'yes' if c else 'no' }} {{ 'only' if not c }}|{{ 'k' in d }} {{ 'v' in d }}", {"c": True, "d": {"k": "v"}}),
    # Access.
    ("{{ m[0].role }} {{ m[0]['content'] }} {{ m[-1].content }} {{ m[9] }} {{ m | length }}", {"m": M}),
    ("{{ s[1:] }} {{ s[:-1] }} {{ s[::-1] }} {{ s[::2] }} {{ s[1:3] }} {{ s[-2:] }} {{ s[10:] }}", {"s": "héllo😀"}),
    ("{{ m[1:] | length }} {{ (m[::-1] | first).content }} {{ m[:1][0].role }}", {"m": M}),
    ("{{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z', 9) }} {{ d.get('z') }}",
     {"d": {"a": 1, "b": [2]}}),
    ("{{ d.nested.deep }} {{ d['nested']['deep'] }} {{ d.missing }} {{ d.missing is defined }}",
     {"d": {"nested": {"deep": "ok"}}}),
    # String methods.
    ("{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.strip(' x') }}|{{ s.upper() }}|{{ s.lower() }}",
     {"s": "  xHello World \n"}),
    ("{{ s.startswith('ab') }} {{ s.endswith('yz') }} {{ s.startswith(('q', 'a')) }} {{ s.split() }} {{ s.split('b') }} "
     "{{ s.split('b', 1) }} {{ s.replace('b', 'B') }} {{ s.title() }} {{ s.capitalize() }}",
     {"s": "abc xyz ab"}),
    ("{{ s.split('</think>')[-1].lstrip('\\n') }}|{{ ', '.join(['a', 'b']) }}", {"s": "<think>r</think>\n\nanswer"}),
    ("{{ s.strip() }}|{{ s | trim }}", {"s": "\u00a0\u3000 wide \u2003\n"}),
    # Filters.
    ("{{ s | trim }}|{{ s | upper }}|{{ s | lower }}|{{ s | capitalize }}|{{ s | title }}|{{ s | replace('o', '0') }}",
     {"s": " hello wORLD "}),
    ("{{ l | join(', ') }}|{{ l | first }}|{{ l | last }}|{{ l | length }}|{{ l | reverse | list }}|{{ l | unique | list }}",
     {"l": ["b", "a", "b"]}),
    ("{{ m | selectattr('role', 'equalto', 'user') | list | length }} "
     "{{ m | rejectattr('role', 'equalto', 'user') | map(attribute='content') | join('+') }} "
     "{{ m | map(attribute='role') | list }} {{ m | selectattr('missing') | list }}", {"m": M}),
    ("{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ 'é\"\\n' | tojson }}", {"v": {"a": [1, 2.5, None, True], "b": "x"}}),
    ("{{ 3 | string }}{{ '42' | int + 1 }} {{ 'x' | int }} {{ 2.7 | int }} {{ 'ab' | list }} {{ d | items | list }}",
     {"d": {"k": "v"}}),
    ("{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}", {}),
    ("{{ -3 | abs }} {{ (-3) | abs }} {{ 'x' | safe }} {{ m | count }}", {"m": M}),
    ("{{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }} {{ l | sort }} {{ l | sort(reverse=true) }} "
     "{{ l | sort(case_sensitive=true) }} {{ m | sort(attribute='role') | map(attribute='content') | join(',') }}",
     {"d": {"b": 2, "A": 3, "c": 1}, "l": ["b", "C", "a"], "m": M}),
    ("{{ none | selectattr('type', 'equalto', 'x') | list | length }} {{ none | map(attribute='a') | list }} "
     "{{ [] | rejectattr('a') | list }}", {}),
    # Tests.
    ("{{ x is defined }} {{ y is undefined }} {{ n is none }} {{ 's' is string }} {{ 1 is number }} {{ d is mapping }} "
     "{{ l is iterable }} {{ l is sequence }} {{ true is true }} {{ 0 is false }} {{ false is boolean }} {{ 1 is integer }}",
     {"x": 1, "n": None, "d": {}, "l": []}),
    ("{{ 'a' is equalto 'a' }} {{ 2 is divisibleby 2 }} {{ 3 is odd }} {{ x is not none }} {{ 1 is eq(1) }} {{ 1 is ne 2 }}",
     {"x": 0}),
    # Statements.
    ("{% for m in msgs %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
     "{{ loop.revindex }}{{ m.role }};{% endfor %}", {"msgs": M}),
    ("{% for x in [] %}no{% else %}empty{% endfor %}|{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.length }}"
     "{% endfor %}", {}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}|{% for k in d %}{{ k }}{% endfor %}",
     {"d": {"b": 1, "a": 2}}),
    ("{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}"
     "{% endfor %}|{{ range(2, 8, 3) | list }}", {}),
    ("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", {}),
    ("{% set ns = namespace(n=0, found=false) %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}"
     "{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.n }} {{ ns.found }}", {}),
    ("{% set a, b = [1, 2] %}{{ a }}{{ b }}|{% set t %}block {{ 1 + 1 }}{% endset %}{{ t }}", {}),
    ("{% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}other{% endif %}", {"x": 3}),
    ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} "
     "{{ greet(name='C', punct='.') }}", {}),
    ("{% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}",
     {}),
    ("{{ loop_var }}{% for m in l %}{{ loop.previtem }}>{{ m }}>{{ loop.nextitem }} {{ loop.cycle('o', 'e') }};{% endfor %}",
     {"l": [1, 2, 3]}),
    ("{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}", {}),
    # Errors: both jinja2 and we must fail.
    ("{{ raise_exception('stop here') }}", {}),
    ("{{ undefined_name.attr }}", {}),
    ("{{ undefined_name['k'] }}", {}),
    ("{{ 'a' + 1 }}", {}),
    ("{{ 1 / 0 }}", {}),
    ("{% for x in 5 %}{% endfor %}", {}),
    ("{{ 'abc' < 1 }}", {}),
    ("{{ 'x' + undefined_name }}", {}),
]


def render(source, variables):
    from transformers.utils.chat_template_utils import _compile_jinja_template

    return _compile_jinja_template(source).render(**variables)


def build():
    cases = []
    for source, variables in CASES:
        try:
            cases.append({"template": source, "variables": variables, "expected": render(source, variables)})
        except Exception as e:  # noqa: BLE001 - the kind of failure is what we record
            cases.append({"template": source, "variables": variables, "error": type(e).__name__})
    return {"comment": "jinja2 3.1.6 renderings, configured as transformers' apply_chat_template; "
                       "made by tests/python/jinja_cases.py", "cases": cases}


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
