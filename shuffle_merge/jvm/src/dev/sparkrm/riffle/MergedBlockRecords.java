package dev.sparkrm.riffle;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockId;
import scala.Tuple2;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The records of one fetched merged block, or of several back to back (a batch fetch of contiguous
 * partitions), one original sub-block at a time.
 *
 * <p>Each sub-block is verified by {@link MergedBlockReader} before it is decompressed, decrypted
 * and deserialized on its own, and counts as read only after its last record was emitted. So a
 * corrupt header or sub-block is found before any of its records go out: it is reported as
 * {@link MergedBlockUnusable}, and the reader reads that sub-block and the rest from the originals.
 *
 * <p>A verified sub-block that still fails to deserialize holds the bytes the map task wrote (the
 * merger checksummed what it read), so the original is damaged too. Before any of its records went
 * out this is also {@link MergedBlockUnusable} (the original is then read, and Spark's own checks
 * deal with it); after, it is {@link MergedBlockFailed}, and the task must fail.
 */
final class MergedBlockRecords extends AbstractIterator<Tuple2<Object, Object>> implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(MergedBlockRecords.class);

  /** Told when records of the merged block have all gone out. */
  interface Progress {
    /** Every record of original block (mapIndex, reduceId) was emitted. */
    void subBlockRead(int mapIndex, int reduceId);

    /** Every sub-block of merged partition {@code reduceId} was emitted. */
    void partitionRead(int reduceId);
  }

  private final BlockId blockId;
  private final int shuffleId;
  private final long syntheticMapId;
  private final MergedBlockReader reader;
  private final SerializerInstance serializer;
  private final SerializerManager serializerManager;
  private final Progress progress;
  private MergedBlockFormat.Header partition;
  private MergedBlockReader.SubBlock subBlock;
  private Iterator<Tuple2<Object, Object>> records;
  private long emitted;
  private int spilled;
  private boolean done;

  MergedBlockRecords(BlockId blockId, int shuffleId, long syntheticMapId, MergedBlockReader reader,
      SerializerInstance serializer, SerializerManager serializerManager, Progress progress) {
    this.blockId = blockId;
    this.shuffleId = shuffleId;
    this.syntheticMapId = syntheticMapId;
    this.reader = reader;
    this.serializer = serializer;
    this.serializerManager = serializerManager;
    this.progress = progress;
  }

  /** Bytes of this merged block read so far (headers included). */
  long bytesRead() {
    return reader.bytesRead();
  }

  /** Sub-blocks too large for memory that were verified through a local file. */
  int spilledSubBlocks() {
    return spilled;
  }

  @Override
  public boolean hasNext() {
    while (!done) {
      if (records != null) {
        if (recordsHaveNext()) return true;
        finishSubBlock();
      }
      openNext();
    }
    return false;
  }

  @Override
  public Tuple2<Object, Object> next() {
    if (!hasNext()) throw new java.util.NoSuchElementException();
    Tuple2<Object, Object> record;
    try {
      record = records.next();
    } catch (Exception e) { // Scala iterators throw I/O errors undeclared
      throw unreadable(e);
    }
    emitted++;
    return record;
  }

  private boolean recordsHaveNext() {
    try {
      return records.hasNext();
    } catch (Exception e) { // codecs throw IOException undeclared; Kryo wraps it in unchecked ones
      throw unreadable(e);
    }
  }

  /** Verifies and opens the next sub-block, moving on to the next partition when one is done. */
  private void openNext() {
    try {
      if (partition != null) {
        subBlock = reader.nextSubBlock();
        if (subBlock != null) {
          if (subBlock.spilled()) spilled++;
          emitted = 0;
          records = deserialize(subBlock.data);
          return;
        }
        progress.partitionRead(partition.reduceId());
      }
      partition = reader.nextPartition();
      if (partition == null) {
        done = true;
        reader.close(); // releases the fetched buffer
      }
    } catch (IOException e) {
      throw new MergedBlockUnusable(syntheticMapId, "cannot use merged block " + blockId + ": " + e.getMessage(), e);
    }
  }

  private Iterator<Tuple2<Object, Object>> deserialize(InputStream verified) {
    ShuffleBlockId id = new ShuffleBlockId(shuffleId, syntheticMapId, subBlock.reduceId);
    try {
      return serializer.deserializeStream(serializerManager.wrapStream(id, verified)).asKeyValueIterator();
    } catch (Exception e) {
      throw unreadable(e);
    }
  }

  private void finishSubBlock() {
    records = null;
    progress.subBlockRead(subBlock.mapIndex, subBlock.reduceId);
    release(subBlock);
    subBlock = null;
  }

  /** Releases the fetched buffer and any verified local copy (after a failure, or at task end). */
  @Override
  public void close() {
    done = true;
    release(subBlock);
    release(reader);
  }

  private static void release(Closeable c) {
    if (c == null) return;
    try {
      c.close();
    } catch (IOException e) { // a local copy left behind goes with the executor's directories
      LOG.warn("Could not release {}: {}", c, e.toString());
    }
  }

  /** A verified sub-block that does not deserialize: its original is damaged the same way. */
  private RuntimeException unreadable(Exception e) {
    String what = "sub-block (map index " + subBlock.mapIndex + ", partition " + subBlock.reduceId + ") of merged block "
        + blockId + " passed its checksum but cannot be deserialized: " + e;
    if (emitted == 0) return new MergedBlockUnusable(syntheticMapId, what, e);
    return new MergedBlockFailed(syntheticMapId, subBlock.mapIndex, subBlock.reduceId, what + " after " + emitted
        + " of its records were used", e);
  }
}
