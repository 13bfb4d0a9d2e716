"""The ground floor of the package: what every other layer shares; it imports nothing of the
package outside ``core``.

- :mod:`.errors`: the one exception hierarchy;
- :mod:`.redaction`: masking secrets in everything shown;
- :mod:`.rules`: the checks of single values (dates, ids, e-mails, time zones);
- :mod:`.strict_json`: the one strict JSON decoder (no NaN, no repeated key, UTF-8 only);
- :mod:`.ndjson`: the one line splitter of streamed exports;
- :mod:`.cohort_records`: the one rule for a line of the cohort export (strict, every
  requested key, the platform's error object named, keys not asked for counted);
- :mod:`.report_dates`: the date labels of analysis answers, read one way;
- :mod:`.answers`: the declared shape of every operation's answer.
"""
