"""A plain JVM (no Spark) behind a py4j gateway, for tests that call Java code directly."""

from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def plain_jvm(*classpath):
    """Yield ``gateway.jvm`` of a fresh JVM with ``classpath``; the JVM ends with the block.

    Once pyspark has run in this process it has replaced py4j's answer handler with one that
    needs a SparkContext; py4j's own is used inside the block (iterating a Java collection
    ends in an exception that handler cannot convert without Spark).
    """
    import py4j.java_gateway
    import py4j.protocol
    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    port = launch_gateway(classpath=os.pathsep.join(str(p) for p in classpath), die_on_exit=True)
    gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=True))
    handler = py4j.java_gateway.get_return_value
    py4j.java_gateway.get_return_value = py4j.protocol.get_return_value
    try:
        yield gateway.jvm
    finally:
        py4j.java_gateway.get_return_value = handler
        gateway.shutdown()


def doubles(jvm, values):
    """A Java ``double[]`` of ``values`` (a plain JVM gives no gateway to call ``new_array`` on)."""
    reflect = jvm.java.lang.reflect.Array
    array = reflect.newInstance(jvm.java.lang.Double.TYPE, len(values))
    for i, v in enumerate(values):
        reflect.setDouble(array, i, float(v))
    return array
