package dev.sparkrm.riffle;

import java.util.function.Consumer;
import org.apache.spark.rpc.RpcEnv;
import org.apache.spark.rpc.ThreadSafeRpcEndpoint;
import scala.Function1;
import scala.PartialFunction;
import scala.runtime.AbstractPartialFunction;
import scala.runtime.BoxedUnit;

/**
 * The RPC endpoint in each executor through which the driver pushes Riffle's messages (merges to run
 * or cancel, shuffles sealed, merges revoked): Spark's plugin RPC only lets executors ask the driver.
 * The executor registers the endpoint's reference with the driver, which reaches it over the
 * executor's own connection, as Spark's scheduler reaches executors. Messages are JSON text, handled
 * one at a time by {@code handler}, which must not block.
 */
final class MergeInbox implements ThreadSafeRpcEndpoint {
  static final String NAME = "sparkrm-riffle-inbox";

  private final RpcEnv rpcEnv;
  private final Consumer<String> handler;

  MergeInbox(RpcEnv rpcEnv, Consumer<String> handler) {
    this.rpcEnv = rpcEnv;
    this.handler = handler;
  }

  @Override
  public RpcEnv rpcEnv() {
    return rpcEnv;
  }

  @Override
  public PartialFunction<Object, BoxedUnit> receive() {
    return new AbstractPartialFunction<>() {
      @Override
      public boolean isDefinedAt(Object message) {
        return message instanceof String;
      }

      @Override
      public <A1, B1> B1 applyOrElse(A1 message, Function1<A1, B1> otherwise) {
        if (!(message instanceof String json)) return otherwise.apply(message);
        handler.accept(json);
        @SuppressWarnings("unchecked")
        B1 unit = (B1) BoxedUnit.UNIT;
        return unit;
      }
    };
  }
}
