package dev.sparkrm.riffle;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.function.BooleanSupplier;
import java.util.zip.CRC32C;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import scala.Option;

/**
 * Merges committed map outputs of one shuffle into one merged output (thesis Algorithm 2).
 *
 * <p>Partition by partition, it copies each input's raw block into the output behind a header of
 * sub-block boundaries and checksums (see {@link MergedBlockFormat}). Each input is read front to
 * back through its own read buffer and the output is written through one write buffer, so the
 * bulk of the I/O is sequential; the headers, whose checksums are known only after their
 * sub-blocks were copied, are written into their reserved places at the end. The data goes to a temporary file and is committed with Spark's own
 * {@code writeMetadataFileAndCommit} (index written, data renamed atomically); a failed or
 * cancelled merge deletes its temporary file and leaves nothing visible.
 *
 * <p>Inputs written by a neighbour on the same host are read from that executor's local directories,
 * as Spark's host-local disk reads do; the merged output is this executor's own.
 */
final class MergeWriter {
  private static final int COPY_CHUNK = 64 * 1024;

  private final IndexShuffleBlockResolver resolver;

  MergeWriter(IndexShuffleBlockResolver resolver) {
    this.resolver = resolver;
  }

  /** A neighbour's local directories cannot be read from here (another user, container or mount). */
  static final class PeerFilesUnreadable extends IOException {
    PeerFilesUnreadable(String message) {
      super(message);
    }
  }

  /** What a merge produced. */
  record Result(long[] partitionLengths, long inputBytes) {
    long outputBytes() {
      long sum = 0;
      for (long l : partitionLengths) sum += l;
      return sum;
    }
  }

  /**
   * Merges {@code inputs}, in that order, into the output stored under {@code syntheticMapId}.
   *
   * @throws CancellationException when {@code cancelled} turns true (checked between partitions)
   * @throws PeerFilesUnreadable when a neighbour's local directory cannot be read
   * @throws IOException when an input is missing or malformed, or writing fails
   */
  Result merge(int shuffleId, long syntheticMapId, List<MergeInput> inputs, int readBufferBytes,
      int writeBufferBytes, BooleanSupplier cancelled) throws IOException {
    checkReadable(inputs);
    int n = inputs.size();
    long[][] offsets = new long[n][];
    int[] mapIndexes = new int[n];
    for (int i = 0; i < n; i++) {
      offsets[i] = readOffsets(resolver.getIndexFile(shuffleId, inputs.get(i).mapId(), dirs(inputs.get(i))));
      mapIndexes[i] = inputs.get(i).mapIndex();
      if (offsets[i].length != offsets[0].length) {
        throw new IOException("Map outputs of shuffle " + shuffleId + " disagree on the number of partitions");
      }
    }
    int partitions = offsets[0].length - 1;
    File target = resolver.getDataFile(shuffleId, syntheticMapId);
    File tmp = new File(target.getParentFile(), target.getName() + "." + UUID.randomUUID() + ".merging");
    InputStream[] in = new InputStream[n];
    long[] lengths = new long[partitions];
    long inputBytes = 0;
    boolean committed = false;
    try (FileOutputStream file = new FileOutputStream(tmp)) {
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(file, writeBufferBytes));
      for (int i = 0; i < n; i++) {
        File data = resolver.getDataFile(shuffleId, inputs.get(i).mapId(), dirs(inputs.get(i)));
        in[i] = new BufferedInputStream(new FileInputStream(data), readBufferBytes);
      }
      byte[] chunk = new byte[COPY_CHUNK];
      List<Long> headerOffsets = new ArrayList<>(); // where each header goes, once its checksums are known
      List<MergedBlockFormat.Header> headers = new ArrayList<>();
      long position = 0;
      for (int p = 0; p < partitions; p++) {
        if (cancelled.getAsBoolean()) throw new CancellationException("merge cancelled");
        long[] sub = new long[n];
        long payload = 0;
        for (int i = 0; i < n; i++) {
          sub[i] = offsets[i][p + 1] - offsets[i][p];
          payload += sub[i];
        }
        if (payload == 0) continue;
        int headerBytes = MergedBlockFormat.headerBytes(n);
        out.write(new byte[headerBytes]);
        int[] crcs = new int[n];
        for (int i = 0; i < n; i++) crcs[i] = copy(in[i], out, sub[i], chunk);
        headerOffsets.add(position);
        headers.add(new MergedBlockFormat.Header(p, mapIndexes, sub, crcs));
        lengths[p] = headerBytes + payload;
        position += lengths[p];
        inputBytes += payload;
      }
      out.flush();
      for (int h = 0; h < headers.size(); h++) {
        ByteBuffer header = ByteBuffer.wrap(MergedBlockFormat.encodeHeader(headers.get(h)));
        long at = headerOffsets.get(h);
        while (header.hasRemaining()) at += file.getChannel().write(header, at);
      }
      file.close();
      resolver.writeMetadataFileAndCommit(shuffleId, syntheticMapId, lengths, new long[0], tmp);
      committed = true;
    } finally {
      for (InputStream s : in) {
        if (s != null) s.close();
      }
      if (!committed) Files.deleteIfExists(tmp.toPath());
    }
    return new Result(lengths, inputBytes);
  }

  /** Fails before any work when a neighbour's directory is not a readable directory here. */
  static void checkReadable(List<MergeInput> inputs) throws PeerFilesUnreadable {
    for (MergeInput in : inputs) {
      for (String dir : in.dirs()) {
        File d = new File(dir);
        if (!d.isDirectory() || !d.canRead()) {
          throw new PeerFilesUnreadable("cannot read the neighbour's local directory " + dir);
        }
      }
    }
  }

  /** Where Spark's resolver looks for an input: a neighbour's directories, or (none given) this executor's. */
  private static Option<String[]> dirs(MergeInput in) {
    return in.dirs().isEmpty() ? Option.empty() : Option.apply(in.dirs().toArray(new String[0]));
  }

  /** The R+1 offsets of a sort-shuffle index file. */
  static long[] readOffsets(File index) throws IOException {
    long size = index.length();
    if (size < 16 || size % 8 != 0) throw new IOException("Missing or malformed shuffle index " + index);
    long[] offsets = new long[(int) (size / 8)];
    try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(index)))) {
      for (int i = 0; i < offsets.length; i++) offsets[i] = in.readLong();
    }
    return offsets;
  }

  /** Copies {@code length} bytes and returns their CRC32C. */
  private static int copy(InputStream in, DataOutputStream out, long length, byte[] chunk) throws IOException {
    CRC32C crc = new CRC32C();
    long left = length;
    while (left > 0) {
      int read = in.read(chunk, 0, (int) Math.min(chunk.length, left));
      if (read < 0) throw new IOException("Shuffle data file ended before its index said");
      crc.update(chunk, 0, read);
      out.write(chunk, 0, read);
      left -= read;
    }
    return (int) crc.getValue();
  }
}
