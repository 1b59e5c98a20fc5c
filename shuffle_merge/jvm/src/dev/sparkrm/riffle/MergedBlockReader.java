package dev.sparkrm.riffle;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.function.IntPredicate;
import java.util.zip.CRC32C;

/**
 * The verified bytes of the merged blocks in one fetched stream (one merged block, or several back
 * to back from a batch fetch), one original sub-block at a time.
 *
 * <p>Nothing leaves this class unverified: a header only after its checksum matched and its
 * partition is the next one expected, a sub-block only after all of its bytes were read and their
 * checksum matched. Sub-blocks up to {@code inMemoryMaxBytes} are checked in memory; larger ones
 * are copied to a local file while their checksum is computed and read back from it, so memory
 * stays bounded whatever the block size. Any mismatch, short read or unexpected partition is an
 * {@link IOException}; what was handed out before it stays valid.
 *
 * <p>It uses only {@code java.io}, so the format can be checked without Spark.
 */
final class MergedBlockReader implements Closeable {
  private static final int COPY_CHUNK = 64 * 1024;

  /** Where sub-blocks too large for memory are verified. */
  interface SpillFiles {
    File create() throws IOException;
  }

  /** One original block's verified bytes; closing it deletes its local copy, if any. */
  static final class SubBlock implements Closeable {
    final int mapIndex;
    final int reduceId;
    final long length;
    final InputStream data;
    private final File spill;

    private SubBlock(int mapIndex, int reduceId, long length, InputStream data, File spill) {
      this.mapIndex = mapIndex;
      this.reduceId = reduceId;
      this.length = length;
      this.data = data;
      this.spill = spill;
    }

    boolean spilled() {
      return spill != null;
    }

    @Override
    public void close() throws IOException {
      try {
        data.close();
      } finally {
        if (spill != null) Files.deleteIfExists(spill.toPath());
      }
    }
  }

  private final DataInputStream in;
  private final int maxInputs;
  private final int[] expectedReduceIds;
  private final IntPredicate wanted;
  private final long inMemoryMaxBytes;
  private final SpillFiles spills;
  private int partitionsRead;
  private MergedBlockFormat.Header header;
  private int nextSubBlock;
  private long bytesRead;

  /**
   * @param maxInputs         how many map outputs the merge holds (a header cannot list more)
   * @param expectedReduceIds the partitions this stream must contain, ascending (one unless batched)
   * @param wanted            map indexes whose sub-blocks are read; the others are skipped unread
   * @param inMemoryMaxBytes  sub-blocks up to this size are verified in memory, larger ones on disk
   */
  MergedBlockReader(InputStream in, int maxInputs, int[] expectedReduceIds, IntPredicate wanted,
      long inMemoryMaxBytes, SpillFiles spills) {
    this.in = new DataInputStream(in);
    this.maxInputs = maxInputs;
    this.expectedReduceIds = expectedReduceIds;
    this.wanted = wanted;
    this.inMemoryMaxBytes = Math.min(inMemoryMaxBytes, Integer.MAX_VALUE - 64);
    this.spills = spills;
  }

  /** Bytes of merged blocks read so far, headers included. */
  long bytesRead() {
    return bytesRead;
  }

  /**
   * The verified header of the next merged block, or {@code null} once every expected partition
   * was read and the stream ended.
   *
   * @throws IOException if the header is corrupt, names another partition, or the stream ends early
   */
  MergedBlockFormat.Header nextPartition() throws IOException {
    if (header != null && nextSubBlock < header.inputs()) {
      throw new IllegalStateException("the sub-blocks of partition " + header.reduceId() + " were not all read");
    }
    MergedBlockFormat.Header h = MergedBlockFormat.readHeader(in, maxInputs);
    header = h;
    nextSubBlock = 0;
    if (h == null) {
      if (partitionsRead < expectedReduceIds.length) {
        throw new EOFException("merged block ended before partition " + expectedReduceIds[partitionsRead]);
      }
      return null;
    }
    if (partitionsRead >= expectedReduceIds.length || h.reduceId() != expectedReduceIds[partitionsRead]) {
      throw new IOException("merged block holds partition " + h.reduceId() + " where "
          + (partitionsRead < expectedReduceIds.length ? "partition " + expectedReduceIds[partitionsRead]
              : "the end") + " was expected (of " + Arrays.toString(expectedReduceIds) + ")");
    }
    partitionsRead++;
    bytesRead += MergedBlockFormat.headerBytes(h.inputs());
    return h;
  }

  /**
   * The next non-empty wanted sub-block of the current merged block, verified, or {@code null} when
   * none is left. The caller closes it.
   *
   * @throws IOException if its checksum does not match or the stream ends early
   */
  SubBlock nextSubBlock() throws IOException {
    while (nextSubBlock < header.inputs()) {
      int i = nextSubBlock++;
      long length = header.lengths()[i];
      if (length == 0) continue;
      if (!wanted.test(header.mapIndexes()[i])) {
        try {
          in.skipNBytes(length);
        } catch (EOFException e) {
          throw endedEarly(i);
        }
        bytesRead += length;
        continue;
      }
      SubBlock b = length <= inMemoryMaxBytes ? inMemory(i, (int) length) : spilled(i, length);
      bytesRead += length;
      return b;
    }
    return null;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }

  private SubBlock inMemory(int i, int length) throws IOException {
    byte[] bytes = new byte[length];
    try {
      in.readFully(bytes);
    } catch (EOFException e) {
      throw endedEarly(i);
    }
    check(i, MergedBlockFormat.crc(bytes, 0, length));
    return new SubBlock(header.mapIndexes()[i], header.reduceId(), length, new ByteArrayInputStream(bytes), null);
  }

  private SubBlock spilled(int i, long length) throws IOException {
    File file = spills.create();
    boolean verified = false;
    try {
      CRC32C crc = new CRC32C();
      byte[] chunk = new byte[COPY_CHUNK];
      try (OutputStream out = new FileOutputStream(file)) {
        long left = length;
        while (left > 0) {
          int n = in.read(chunk, 0, (int) Math.min(chunk.length, left));
          if (n < 0) throw endedEarly(i);
          crc.update(chunk, 0, n);
          out.write(chunk, 0, n);
          left -= n;
        }
      }
      check(i, (int) crc.getValue());
      verified = true;
      InputStream data = new BufferedInputStream(new FileInputStream(file), COPY_CHUNK);
      return new SubBlock(header.mapIndexes()[i], header.reduceId(), length, data, file);
    } finally {
      if (!verified) Files.deleteIfExists(file.toPath());
    }
  }

  private void check(int i, int actual) throws IOException {
    if (actual != header.crcs()[i]) {
      throw new IOException("checksum mismatch in sub-block " + i + " (map index " + header.mapIndexes()[i]
          + ") of partition " + header.reduceId());
    }
  }

  private EOFException endedEarly(int i) {
    return new EOFException("merged block ended inside sub-block " + i + " (map index " + header.mapIndexes()[i]
        + ") of partition " + header.reduceId());
  }
}
