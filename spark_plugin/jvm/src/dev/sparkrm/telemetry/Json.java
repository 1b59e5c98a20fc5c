package dev.sparkrm.telemetry;

/** Minimal JSON writing for telemetry lines: flat objects of numbers, strings, booleans and int lists. */
final class Json {
  private Json() {}

  /** Appends {@code s} as a JSON string literal, or {@code null}. */
  static void appendString(StringBuilder out, String s) {
    if (s == null) {
      out.append("null");
      return;
    }
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default:
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
      }
    }
    out.append('"');
  }

  /** Appends any supported value: null, Number, Boolean, String, or long[]. */
  static void appendValue(StringBuilder out, Object value) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      out.append(Double.isFinite(d) ? Double.toString(d) : "null");
    } else if (value instanceof Number || value instanceof Boolean) {
      out.append(value);
    } else if (value instanceof long[]) {
      long[] xs = (long[]) value;
      out.append('[');
      for (int i = 0; i < xs.length; i++) {
        if (i > 0) out.append(',');
        out.append(xs[i]);
      }
      out.append(']');
    } else {
      appendString(out, value.toString());
    }
  }
}
