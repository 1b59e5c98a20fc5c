package dev.sparkrm.wrangler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sparkrm.conf.SparkrmConf;
import dev.sparkrm.conf.SparkrmConfigException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
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

  private WranglerModel(ModelFile.Model m) {
    features = m.features();
    scale = vector(m.scaler().scale());
    offset = vector(m.scaler().offset());
    ModelFile.Shared s = m.shared();
    shared = linear(new ModelFile.Linear(s.weights(), s.intercept(), s.sigmoids()));
    sharedNodes = vectors(s.nodes());
    sharedWorkloads = vectors(s.workloads());
    nodes = new HashMap<>();
    m.nodes().forEach((node, model) -> nodes.put(node, linear(model)));
  }

  /**
   * Reads a model file after checking it completely ({@link ModelFile}, the check Python makes of
   * {@code spark.wrangler.model.path} before a JVM starts): every field present, of its type, and every
   * vector with one entry per feature, so {@link #predict} cannot fail.
   *
   * @throws SparkrmConfigException one line naming the file, the field and how to write a valid one
   */
  public static WranglerModel load(String path) {
    String problem = SparkrmConf.fileProblem(KEY, path);
    if (problem != null) throw new SparkrmConfigException(problem);
    try {
      return new WranglerModel(ModelFile.read(Files.readAllBytes(Path.of(path))));
    } catch (IOException e) { // it was read and checked a moment ago
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

  private static Linear linear(ModelFile.Linear l) {
    double[][] sigmoids = new double[l.sigmoids().length][];
    for (int i = 0; i < sigmoids.length; i++) sigmoids[i] = vector(l.sigmoids()[i]);
    return new Linear(vector(l.weights()), l.intercept(), sigmoids);
  }

  private static Map<String, double[]> vectors(Map<String, Double[]> blocks) {
    Map<String, double[]> out = new HashMap<>();
    blocks.forEach((name, weights) -> out.put(name, vector(weights)));
    return out;
  }

  /** {@code null} entries (NaN in Python) become NaN. */
  private static double[] vector(Double[] boxed) {
    double[] v = new double[boxed.length];
    for (int i = 0; i < v.length; i++) v[i] = boxed[i] == null ? Double.NaN : boxed[i];
    return v;
  }
}
