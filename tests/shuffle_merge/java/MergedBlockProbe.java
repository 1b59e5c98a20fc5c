package dev.sparkrm.riffle;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Test access to Riffle's merged-block format from Python (through a plain py4j gateway, no
 * Spark): writes merged blocks exactly as {@link MergeWriter} lays them out and reads them back
 * through the product's {@link MergedBlockReader}. Lists travel as comma-separated numbers.
 */
public final class MergedBlockProbe {
  private MergedBlockProbe() {}

  /**
   * One merged block for partition {@code reduceId}: the header (boundaries and checksums of the
   * sub-blocks cut from {@code payload} by {@code lengths}), then the payload.
   */
  public static byte[] encode(int reduceId, String mapIndexes, String lengths, byte[] payload) {
    int[] maps = ints(mapIndexes);
    long[] lens = new long[maps.length];
    int[] crcs = new int[maps.length];
    int offset = 0;
    int[] given = ints(lengths);
    for (int i = 0; i < maps.length; i++) {
      lens[i] = given[i];
      crcs[i] = MergedBlockFormat.crc(payload, offset, given[i]);
      offset += given[i];
    }
    byte[] header = MergedBlockFormat.encodeHeader(new MergedBlockFormat.Header(reduceId, maps, lens, crcs));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(header);
    out.write(payload, 0, offset);
    return out.toByteArray();
  }

  /**
   * Reads {@code stream} as the reader does and returns, in order, each sub-block it handed out as
   * {@code "<reduceId>:<mapIndex>"} followed by its bytes; if reading failed, the last element is
   * the failure as {@code "error: <message>"}. Spill files go to {@code spillDir}. Sub-blocks of the
   * map indexes in {@code skippedMapIndexes} are skipped, as for a reader of a map range.
   */
  public static List<Object> read(byte[] stream, int maxInputs, String expectedReduceIds, long inMemoryMaxBytes,
      String spillDir, String skippedMapIndexes) {
    List<Object> out = new ArrayList<>();
    MergedBlockReader.SpillFiles spills = () -> File.createTempFile("riffle-verify", ".bin", new File(spillDir));
    int[] skipped = ints(skippedMapIndexes);
    try (MergedBlockReader reader = new MergedBlockReader(new ByteArrayInputStream(stream), maxInputs,
        ints(expectedReduceIds), i -> java.util.Arrays.stream(skipped).noneMatch(s -> s == i), inMemoryMaxBytes,
        spills)) {
      while (reader.nextPartition() != null) {
        MergedBlockReader.SubBlock b;
        while ((b = reader.nextSubBlock()) != null) {
          try (MergedBlockReader.SubBlock sub = b) {
            out.add(sub.reduceId + ":" + sub.mapIndex);
            out.add(sub.data.readAllBytes());
          }
        }
      }
    } catch (IOException e) {
      out.add("error: " + e.getMessage());
    }
    return out;
  }

  private static int[] ints(String csv) {
    if (csv.isEmpty()) return new int[0];
    String[] parts = csv.split(",");
    int[] values = new int[parts.length];
    for (int i = 0; i < parts.length; i++) values[i] = Integer.parseInt(parts[i].trim());
    return values;
  }
}
