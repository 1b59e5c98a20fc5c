package dev.sparkrm.advisor;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.deploy.history.EventLogFileReader;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Prints Spark event logs as the JSON lines Spark wrote, decoded by Spark's own history-server readers.
 *
 * <p>Spark 4 writes an application's log as a rolling directory ({@code eventlog_v2_<appId>/events_<n>_...})
 * or a single file, compressed by the codec its name ends with (zstd by default; lz4, snappy and lzf use
 * Spark's own framings, not the libraries' plain frame formats). Decoding them with the very classes the
 * history server uses means every form Spark can write is read exactly as Spark reads it. The advisor
 * (Python) parses the lines; this class only decodes.
 *
 * <p>Output, per path argument: a header line {@code #sparkrm-log<TAB>path<TAB>completed|in-progress}, then
 * the log's lines in order. A path Spark would not read as an event log gives
 * {@code #sparkrm-skip<TAB>path<TAB>reason}; an event file that ends inside a compressed block (an
 * application still writing it, or killed) gives {@code #sparkrm-truncated<TAB>file<TAB>reason} after the
 * lines read before the break. Event lines are JSON objects, so no header can be mistaken for one.
 */
public final class EventLogText {

    private EventLogText() {}

    public static void main(String[] args) throws IOException {
        Configuration hadoop = new Configuration();
        try (Writer out = new BufferedWriter(new OutputStreamWriter(
                new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8), 1 << 16)) {
            for (String arg : args) {
                print(arg, new Path(new File(arg).getAbsoluteFile().toURI()), hadoop, out);
            }
        }
    }

    private static void print(String name, Path path, Configuration hadoop, Writer out) throws IOException {
        FileSystem fs = path.getFileSystem(hadoop);
        Option<EventLogFileReader> found;
        try {
            found = EventLogFileReader.apply(fs, fs.getFileStatus(path));
        } catch (IOException e) {
            header(out, "#sparkrm-skip", name, "cannot be read: " + e.getMessage());
            return;
        }
        if (found.isEmpty()) {
            header(out, "#sparkrm-skip", name, "is not an event log (a hidden file, or a folder not named eventlog_v2_*)");
            return;
        }
        EventLogFileReader reader = found.get();
        Iterable<FileStatus> files;
        boolean completed;
        try {
            files = CollectionConverters.asJava(reader.listEventLogFiles());
            completed = reader.completed();
        } catch (RuntimeException e) {  // a rolling folder without its appstatus marker, for one
            header(out, "#sparkrm-skip", name, "is not a complete event log folder: " + e.getMessage());
            return;
        }
        header(out, "#sparkrm-log", name, completed ? "completed" : "in-progress");
        for (FileStatus file : files) {
            copyLines(file.getPath(), fs, out);
        }
    }

    private static void copyLines(Path file, FileSystem fs, Writer out) throws IOException {
        try (InputStream in = EventLogFileReader.openEventLog(file, fs);
             BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                out.write(line);
                out.write('\n');
            }
        } catch (IOException | RuntimeException e) {
            header(out, "#sparkrm-truncated", file.getName(), String.valueOf(e.getMessage()).replace('\n', ' '));
        }
    }

    private static void header(Writer out, String kind, String name, String detail) throws IOException {
        out.write('\n');  // a truncated file's last line may lack its newline
        out.write(kind + "\t" + name + "\t" + detail + "\n");
    }
}
