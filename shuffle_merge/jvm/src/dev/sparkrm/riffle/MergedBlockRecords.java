package dev.sparkrm.riffle;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.function.Consumer;
import java.util.zip.CRC32;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockId;
import scala.Tuple2;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;

/**
 * The records of one fetched merged block, or of several back to back (a batch fetch of contiguous
 * partitions). For each merged partition it reads the header, checks the payload's CRC, and only
 * then decompresses, decrypts and deserializes each original sub-block on its own.
 *
 * <p>Partitions up to {@code verifyMaxBytes} are checked before any of their records are emitted,
 * so a corrupt one is reported as {@link MergedBlockUnusable} and the reader falls back to the
 * originals. Larger partitions are streamed and checked at their end; a mismatch there fails the
 * task, since records were already emitted.
 */
final class MergedBlockRecords extends AbstractIterator<Tuple2<Object, Object>> {
  private final BlockId blockId;
  private final int shuffleId;
  private final long syntheticMapId;
  private final InputStream raw;
  private final DataInputStream in;
  private final SerializerInstance serializer;
  private final SerializerManager serializerManager;
  private final long verifyMaxBytes;
  private final Consumer<MergedBlockFormat.Header> onPartition;
  private final ArrayDeque<InputStream> subBlocks = new ArrayDeque<>();
  private final CRC32 crc = new CRC32();
  private Iterator<Tuple2<Object, Object>> current;
  /** Sub-blocks are unwrapped as blocks of this id (a plain shuffle block, whatever was fetched). */
  private ShuffleBlockId partitionId;
  private boolean streaming;
  private long bytesRead;
  private boolean done;

  MergedBlockRecords(BlockId blockId, int shuffleId, long syntheticMapId, InputStream raw,
      SerializerInstance serializer, SerializerManager serializerManager, long verifyMaxBytes,
      Consumer<MergedBlockFormat.Header> onPartition) {
    this.blockId = blockId;
    this.shuffleId = shuffleId;
    this.syntheticMapId = syntheticMapId;
    this.raw = raw;
    this.in = new DataInputStream(raw);
    this.serializer = serializer;
    this.serializerManager = serializerManager;
    this.verifyMaxBytes = verifyMaxBytes;
    this.onPartition = onPartition;
  }

  /** Bytes of this merged block read so far (headers and trailers included). */
  long bytesRead() {
    return bytesRead;
  }

  @Override
  public boolean hasNext() {
    try {
      while (!done) {
        if (current != null && current.hasNext()) return true;
        if (!subBlocks.isEmpty()) {
          current = serializer.deserializeStream(serializerManager.wrapStream(partitionId, subBlocks.poll()))
              .asKeyValueIterator();
        } else if (!nextPartition()) {
          done = true;
          raw.close(); // releases the fetched buffer
        }
      }
      return false;
    } catch (IOException e) {
      throw new MergedBlockUnusable(syntheticMapId, "Cannot read merged block " + blockId + ": " + e, e);
    }
  }

  @Override
  public Tuple2<Object, Object> next() {
    if (!hasNext()) throw new java.util.NoSuchElementException();
    return current.next();
  }

  /** Finishes the previous partition and queues the sub-blocks of the next one; false at the end. */
  private boolean nextPartition() throws IOException {
    if (streaming) {
      streaming = false;
      checkTrailer(true);
    }
    MergedBlockFormat.Header h = MergedBlockFormat.readHeader(in);
    if (h == null) return false;
    partitionId = new ShuffleBlockId(shuffleId, syntheticMapId, h.reduceId());
    bytesRead += MergedBlockFormat.headerBytes(h.lengths().length) + h.payloadBytes() + MergedBlockFormat.TRAILER_BYTES;
    crc.reset();
    if (h.payloadBytes() <= verifyMaxBytes) {
      byte[] payload = new byte[(int) h.payloadBytes()];
      in.readFully(payload);
      crc.update(payload);
      checkTrailer(false);
      onPartition.accept(h);
      int offset = 0;
      for (long len : h.lengths()) {
        if (len > 0) subBlocks.add(new ByteArrayInputStream(payload, offset, (int) len));
        offset += (int) len;
      }
    } else {
      onPartition.accept(h); // records go out before the check: this partition cannot fall back
      streaming = true;
      for (long len : h.lengths()) {
        if (len > 0) subBlocks.add(new BoundedStream(in, len, crc));
      }
    }
    return true;
  }

  private void checkTrailer(boolean afterEmitting) throws IOException {
    long expected = in.readLong();
    if (expected == crc.getValue()) return;
    String message = "Merged block " + blockId + " is corrupt (CRC mismatch)";
    if (afterEmitting) throw new IllegalStateException(message + " after its records were used; the task fails");
    throw new IOException(message);
  }

  /** A window of {@code length} bytes of a shared stream; closing it skips what is left, never the parent. */
  private static final class BoundedStream extends InputStream {
    private final InputStream parent;
    private final CRC32 crc;
    private long left;

    BoundedStream(InputStream parent, long length, CRC32 crc) {
      this.parent = parent;
      this.left = length;
      this.crc = crc;
    }

    @Override
    public int read() throws IOException {
      if (left <= 0) return -1;
      int b = parent.read();
      if (b < 0) throw new IOException("Merged block ended early");
      left--;
      crc.update(b);
      return b;
    }

    @Override
    public int read(byte[] buf, int off, int len) throws IOException {
      if (left <= 0) return -1;
      int n = parent.read(buf, off, (int) Math.min(len, left));
      if (n < 0) throw new IOException("Merged block ended early");
      left -= n;
      crc.update(buf, off, n);
      return n;
    }

    @Override
    public void close() throws IOException {
      byte[] skip = new byte[8192];
      while (left > 0 && read(skip, 0, skip.length) > 0) {
        // drain the rest of this sub-block into the checksum
      }
    }
  }
}
