package dev.sparkrm.riffle;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;

/**
 * Layout of a merged shuffle output, written as an ordinary sort-shuffle data/index pair.
 *
 * <p>A merge of n map outputs is stored under a <em>synthetic map id</em> (far above any task
 * attempt id), so Spark's own resolver, local reads, host-local reads, netty fetches and batch
 * fetches serve it unchanged. Merged block r (for reduce partition r) is:
 *
 * <pre>
 *   int magic, int reduceId, int n,
 *   n x (int mapIndex, long length),      -- sub-block boundaries, in merge order
 *   the n original blocks r, raw bytes,   -- compressed/encrypted exactly as the map wrote them
 *   long crc32 of those bytes
 * </pre>
 *
 * Keeping the boundaries lets the reader decompress and deserialize each original block on its
 * own, so every serializer, codec and IO encryption works; the trailer lets it detect a corrupt
 * block before emitting any of its records. A partition empty in every input is stored as zero
 * bytes (Spark never asks for empty blocks).
 */
final class MergedBlockFormat {
  static final int MAGIC = 0x52464c31; // "RFL1"
  /** Synthetic map ids are this base plus the merge group id: unique within the application. */
  static final long SYNTHETIC_MAP_ID_BASE = 1L << 60;
  static final int TRAILER_BYTES = 8;

  private MergedBlockFormat() {}

  static boolean isSynthetic(long mapId) {
    return mapId >= SYNTHETIC_MAP_ID_BASE;
  }

  static long syntheticMapId(long groupId) {
    return SYNTHETIC_MAP_ID_BASE + groupId;
  }

  static long groupIdOf(long syntheticMapId) {
    return syntheticMapId - SYNTHETIC_MAP_ID_BASE;
  }

  static int headerBytes(int inputs) {
    return 12 + 12 * inputs;
  }

  static void writeHeader(DataOutputStream out, int reduceId, int[] mapIndexes, long[] lengths)
      throws IOException {
    out.writeInt(MAGIC);
    out.writeInt(reduceId);
    out.writeInt(mapIndexes.length);
    for (int i = 0; i < mapIndexes.length; i++) {
      out.writeInt(mapIndexes[i]);
      out.writeLong(lengths[i]);
    }
  }

  /** The boundaries of one merged block. */
  record Header(int reduceId, int[] mapIndexes, long[] lengths) {
    long payloadBytes() {
      long sum = 0;
      for (long l : lengths) sum += l;
      return sum;
    }
  }

  /**
   * Reads the next header, or returns {@code null} at a clean end of stream (a batch fetch returns
   * several merged blocks back to back).
   *
   * @throws IOException if the bytes are not a merged block (wrong magic, impossible counts)
   */
  static Header readHeader(DataInputStream in) throws IOException {
    int magic;
    try {
      magic = in.readInt();
    } catch (EOFException e) {
      return null;
    }
    if (magic != MAGIC) throw new IOException("Not a Riffle merged block: magic " + Integer.toHexString(magic));
    int reduceId = in.readInt();
    int n = in.readInt();
    if (n < 1 || n > 1_000_000) throw new IOException("Corrupt Riffle merged block header: " + n + " inputs");
    int[] mapIndexes = new int[n];
    long[] lengths = new long[n];
    for (int i = 0; i < n; i++) {
      mapIndexes[i] = in.readInt();
      lengths[i] = in.readLong();
      if (lengths[i] < 0) throw new IOException("Corrupt Riffle merged block header: negative length");
    }
    return new Header(reduceId, mapIndexes, lengths);
  }
}
