package dev.sparkrm.telemetry;

import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes one application's telemetry to {@code <dir>/<appId>.telemetry.jsonl}.
 *
 * <p>Like Spark's event log, the file is named {@code ….inprogress} while the application runs
 * and renamed when it stops, so a reader can tell a complete file from one of a crashed or
 * running application. Write errors are logged once and stop the sink; they never fail the job.
 */
final class TelemetryFileSink {
  private static final Logger LOG = LoggerFactory.getLogger(TelemetryFileSink.class);
  static final String SUFFIX = ".telemetry.jsonl";

  private final File finalFile;
  private final File inProgress;
  private BufferedWriter out;

  TelemetryFileSink(File dir, String appId) {
    this.finalFile = new File(dir, appId + SUFFIX);
    this.inProgress = new File(dir, appId + SUFFIX + ".inprogress");
    try {
      this.out = Files.newBufferedWriter(inProgress.toPath(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot create telemetry file " + inProgress, e);
    }
    LOG.info("Writing telemetry to {}", finalFile);
  }

  void write(String line) {
    if (out == null) return;
    try {
      out.write(line);
      out.write('\n');
    } catch (IOException e) {
      fail(e);
    }
  }

  void flush() {
    if (out == null) return;
    try {
      out.flush();
    } catch (IOException e) {
      fail(e);
    }
  }

  void close() {
    if (out == null) return;
    try {
      out.close();
      Files.move(inProgress.toPath(), finalFile.toPath(), StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      LOG.error("Telemetry file {} may be incomplete: {}", inProgress, e.toString());
    }
    out = null;
  }

  private void fail(IOException e) {
    LOG.error("Stopped writing telemetry to {} after a write error; records stay in memory", inProgress, e);
    try {
      out.close();
    } catch (IOException ignored) {
      // already failing; the first error was logged
    }
    out = null;
  }
}
