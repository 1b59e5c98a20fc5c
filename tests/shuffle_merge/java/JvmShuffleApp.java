import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * A plain JVM Spark application for the Riffle tests. Shuffles through the Java API use Spark's
 * JavaSerializer, whose streams cannot be concatenated: merged blocks must be read sub-block by
 * sub-block. Prints a digest of its groupByKey and sortByKey results.
 */
public final class JvmShuffleApp {
  /** A value class of our own: Spark cannot pick Kryo for it automatically. */
  public static final class Reading implements Serializable {
    final int sensor;
    final long value;

    Reading(int sensor, long value) {
      this.sensor = sensor;
      this.value = value;
    }
  }

  public static void main(String[] args) throws Exception {
    SparkSession spark = SparkSession.builder().appName("jvm-shuffle-app").getOrCreate();
    JavaSparkContext sc = new JavaSparkContext(spark.sparkContext());
    List<Reading> readings = new ArrayList<>();
    for (int i = 0; i < 30_000; i++) readings.add(new Reading((i * 7919) % 211, i));
    JavaPairRDD<Integer, Reading> pairs = sc.parallelize(readings, 12).mapToPair(r -> new Tuple2<>(r.sensor, r));
    Map<Integer, Long> sums = new TreeMap<>();
    for (Tuple2<Integer, Iterable<Reading>> g : pairs.groupByKey(5).collect()) {
      long s = 0;
      for (Reading r : g._2()) s += r.value;
      sums.put(g._1(), s);
    }
    List<Tuple2<Long, Reading>> sorted =
        sc.parallelize(readings, 12).mapToPair(r -> new Tuple2<>(r.value * 31 % 30_011, r)).sortByKey(false, 4).collect();
    StringBuilder text = new StringBuilder(sums.toString());
    for (Tuple2<Long, Reading> t : sorted) text.append(t._1()).append(':').append(t._2().value).append(',');
    byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.toString().getBytes(StandardCharsets.UTF_8));
    StringBuilder hex = new StringBuilder();
    for (byte b : digest) hex.append(String.format("%02x", b));
    System.out.println("RESULT " + sums.size() + " " + sorted.size() + " " + hex);
    System.out.println("APP " + sc.sc().applicationId());
    spark.stop();
  }
}
