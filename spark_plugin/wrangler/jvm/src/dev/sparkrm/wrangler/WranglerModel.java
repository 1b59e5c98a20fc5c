package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * A trained Wrangler model scored in the driver JVM, so a {@code spark-submit --conf} application holds
 * with no Python driver loop.
 *
 * <p>Reads the JSON that {@code python -m spark_plugin.wrangler train --out model.json} (or {@code export})
 * writes from a fitted {@code StragglerPredictor}, and computes what its {@code predict} computes: min-max
 * scaling clipped to [0, 1] with missing counters as 0; a node's own linear SVM if it has one, else the
 * multi-task model with weights {@code w0 + wNode + wWorkload} (blocks already scaled by their square-root
 * factors; an unseen node or workload adds nothing); the confidence is the mean over the calibrators of
 * {@code 1 / (1 + exp(a * score + b))}, as scikit-learn's sigmoid calibration.
 */
public final class WranglerModel {
  static final String KEY = "spark.wrangler.model.path";

  /** One linear SVM and its sigmoid calibrators. */
  private record Linear(double[] weights, double intercept, double[][] sigmoids) {
    double score(double[] x, double[] extra1, double[] extra2) {
      double s = intercept;
      for (int i = 0; i < x.length; i++) {
        double w = weights[i] + (extra1 == null ? 0 : extra1[i]) + (extra2 == null ? 0 : extra2[i]);
        s += w * x[i];
      }
      return s;
    }

    double confidence(double score) {
      double sum = 0;
      for (double[] ab : sigmoids) sum += 1.0 / (1.0 + Math.exp(ab[0] * score + ab[1]));
      return sum / sigmoids.length;
    }
  }

  private final String[] features;
  private final double[] scale;
  private final double[] offset;
  private final Linear shared;
  private final Map<String, double[]> sharedNodes;
  private final Map<String, double[]> sharedWorkloads;
  private final Map<String, Linear> nodes;

  private WranglerModel(JsonNode root) {
    JsonNode f = root.path("features");
    features = new String[f.size()];
    for (int i = 0; i < features.length; i++) features[i] = f.get(i).asText();
    scale = vector(root.path("scaler").path("scale"));
    offset = vector(root.path("scaler").path("offset"));
    JsonNode s = root.path("shared");
    shared = linear(s);
    sharedNodes = vectors(s.path("nodes"));
    sharedWorkloads = vectors(s.path("workloads"));
    nodes = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = root.path("nodes").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      nodes.put(e.getKey(), linear(e.getValue()));
    }
  }

  /**
   * Reads a model file after checking it completely against {@code dev/sparkrm/wrangler/model.schema.json}
   * (the schema Python checks {@code spark.wrangler.model.path} against before a JVM starts): every field
   * present, of its type, and every vector with one entry per feature, so {@link #predict} cannot fail.
   *
   * @throws SparkrmConfigException one line naming the file, the field and how to write a valid one
   */
  public static WranglerModel load(String path) {
    String problem = SparkrmConf.fileProblem(KEY, path);
    if (problem != null) throw new SparkrmConfigException(problem);
    try {
      return new WranglerModel(new ObjectMapper().readTree(Files.readAllBytes(Path.of(path))));
    } catch (IOException e) { // it was read a moment ago
      throw new SparkrmConfigException(KEY + "=" + path + " cannot be read (" + e.getMessage() + ").");
    }
  }

  /** Counter names, in the order {@link #predict} reads them. */
  public String[] features() {
    return features.clone();
  }

  /**
   * Score and confidence of one sample.
   *
   * @param raw counters in {@link #features} order, NaN where missing
   * @return {@code {score, confidence}}
   */
  public double[] predict(double[] raw, String node, String workload) {
    double[] x = new double[raw.length];
    for (int i = 0; i < x.length; i++) {
      double v = raw[i] * scale[i] + offset[i];
      x[i] = Double.isNaN(v) ? 0.0 : Math.min(1.0, Math.max(0.0, v));
    }
    Linear own = nodes.get(node);
    double score = own != null ? own.score(x, null, null)
        : shared.score(x, sharedNodes.get(node), sharedWorkloads.get(workload));
    return new double[] {score, (own != null ? own : shared).confidence(score)};
  }

  /** Score and confidence of a node sample as the executors send it (a JSON object of counters). */
  double[] predict(JsonNode sample, String node, String workload) {
    double[] raw = new double[features.length];
    for (int i = 0; i < raw.length; i++) {
      JsonNode v = sample.path(features[i]);
      raw[i] = v.isNumber() ? v.asDouble() : Double.NaN;
    }
    return predict(raw, node, workload);
  }

  private static Linear linear(JsonNode n) {
    JsonNode s = n.path("sigmoids");
    double[][] sigmoids = new double[s.size()][];
    for (int i = 0; i < sigmoids.length; i++) sigmoids[i] = vector(s.get(i));
    return new Linear(vector(n.path("weights")), n.path("intercept").asDouble(), sigmoids);
  }

  private static Map<String, double[]> vectors(JsonNode n) {
    Map<String, double[]> out = new HashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      out.put(e.getKey(), vector(e.getValue()));
    }
    return out;
  }

  /** A JSON array of numbers; {@code null} entries (NaN in Python) stay NaN. */
  private static double[] vector(JsonNode n) {
    double[] v = new double[n.size()];
    for (int i = 0; i < v.length; i++) v[i] = n.get(i).isNumber() ? n.get(i).asDouble() : Double.NaN;
    return v;
  }
}
