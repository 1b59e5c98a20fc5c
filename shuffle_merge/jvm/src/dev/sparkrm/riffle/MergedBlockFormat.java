package dev.sparkrm.riffle;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Layout of a merged shuffle output, written as an ordinary sort-shuffle data/index pair.
 *
 * <p>A merge of n map outputs is stored under a <em>synthetic map id</em> (far above any task
 * attempt id), so Spark's own resolver, local reads, host-local reads, netty fetches and batch
 * fetches serve it unchanged. Merged block r (for reduce partition r) is:
 *
 * <pre>
 *   int magic, int reduceId, int n,
 *   n x (int mapIndex, long length, int crc32c),  -- one entry per original block r, in merge order
 *   int crc32c of the header bytes above,
 *   the n original blocks r, raw bytes,          -- compressed/encrypted exactly as the map wrote them
 * </pre>
 *
 * Keeping the boundaries lets the reader decompress and deserialize each original block on its
 * own, so every serializer, codec and IO encryption works. The header has its own checksum and
 * every sub-block has one, so a reader verifies the boundaries before trusting them and each
 * sub-block before emitting any of its records: a corrupt byte anywhere costs at most a re-read of
 * the original blocks not yet emitted. A partition empty in every input is stored as zero bytes
 * (Spark never asks for empty blocks).
 */
final class MergedBlockFormat {
  static final int MAGIC = 0x52464c32; // "RFL2"
  /** Synthetic map ids are this base plus the merge group id: unique within the application. */
  static final long SYNTHETIC_MAP_ID_BASE = 1L << 60;
  private static final int ENTRY_BYTES = 16;

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

  /** Bytes of the header of a merged block of {@code inputs} sub-blocks, its checksum included. */
  static int headerBytes(int inputs) {
    return 12 + ENTRY_BYTES * inputs + 4;
  }

  /** The boundaries and checksums of one merged block. */
  record Header(int reduceId, int[] mapIndexes, long[] lengths, int[] crcs) {
    int inputs() {
      return mapIndexes.length;
    }
  }

  /** The header of merged block {@code h}, its checksum last. */
  static byte[] encodeHeader(Header h) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(headerBytes(h.inputs()));
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(MAGIC);
      out.writeInt(h.reduceId());
      out.writeInt(h.inputs());
      for (int i = 0; i < h.inputs(); i++) {
        out.writeInt(h.mapIndexes()[i]);
        out.writeLong(h.lengths()[i]);
        out.writeInt(h.crcs()[i]);
      }
      out.writeInt(0); // checksum placeholder
    } catch (IOException e) {
      throw new IllegalStateException("cannot write to memory", e);
    }
    byte[] header = bytes.toByteArray();
    ByteBuffer.wrap(header).putInt(header.length - 4, crc(header, 0, header.length - 4));
    return header;
  }

  /**
   * Reads and verifies the next header, or returns {@code null} at a clean end of stream (a batch
   * fetch returns several merged blocks back to back).
   *
   * @param maxInputs the most sub-blocks a header of this merge can list (its number of inputs)
   * @throws IOException if the bytes are not a merged block header with a matching checksum
   */
  static Header readHeader(DataInputStream in, int maxInputs) throws IOException {
    byte[] fixed = new byte[12];
    int first = in.read(fixed, 0, 1);
    if (first < 0) return null;
    in.readFully(fixed, 1, 11);
    ByteBuffer b = ByteBuffer.wrap(fixed);
    int magic = b.getInt();
    if (magic != MAGIC) throw new IOException("not a Riffle merged block (magic " + Integer.toHexString(magic) + ")");
    int reduceId = b.getInt();
    int n = b.getInt();
    if (n < 1 || n > maxInputs) {
      throw new IOException("corrupt merged block header: " + n + " sub-blocks, this merge has " + maxInputs);
    }
    byte[] header = new byte[headerBytes(n)];
    System.arraycopy(fixed, 0, header, 0, fixed.length);
    in.readFully(header, fixed.length, header.length - fixed.length);
    ByteBuffer rest = ByteBuffer.wrap(header);
    int stored = rest.getInt(header.length - 4);
    if (stored != crc(header, 0, header.length - 4)) throw new IOException("merged block header checksum mismatch");
    rest.position(fixed.length);
    int[] mapIndexes = new int[n];
    long[] lengths = new long[n];
    int[] crcs = new int[n];
    for (int i = 0; i < n; i++) {
      mapIndexes[i] = rest.getInt();
      lengths[i] = rest.getLong();
      crcs[i] = rest.getInt();
      if (lengths[i] < 0) throw new IOException("corrupt merged block header: negative length");
    }
    return new Header(reduceId, mapIndexes, lengths, crcs);
  }

  static int crc(byte[] bytes, int offset, int length) {
    CRC32C crc = new CRC32C();
    crc.update(bytes, offset, length);
    return (int) crc.getValue();
  }
}
