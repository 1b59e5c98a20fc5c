package dev.sparkrm.conf;

/**
 * A sparkrm configuration key is unknown, has a bad value or breaks a rule between keys; the message
 * names key, value and fix. It carries no stack trace: the message is the whole story, and Spark
 * prints the exception of a failed start at least twice.
 */
public final class SparkrmConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public SparkrmConfigException(String message) {
    super(message);
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
