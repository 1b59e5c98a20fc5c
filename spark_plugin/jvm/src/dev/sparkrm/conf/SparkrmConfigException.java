package dev.sparkrm.conf;

/** A sparkrm configuration key is unknown or has a bad value; the message names key, value and fix. */
public final class SparkrmConfigException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public SparkrmConfigException(String message) {
    super(message);
  }
}
