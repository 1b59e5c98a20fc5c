"""The models and search space the Repack benchmarks train (small enough for 2 CPU cores)."""

from __future__ import annotations

def optimizer(name: str, lr: float):
    import keras

    if name == "momentum":
        return keras.optimizers.SGD(lr, momentum=0.9)
    return {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD,
            "adagrad": keras.optimizers.Adagrad}[name](lr)


def mlp3(input_shape, n_classes=10, *, hidden=256, activation="relu", opt="adam", lr=1e-3):
    """MLP-3: three hidden Dense layers (the thesis's smallest model)."""
    import keras

    layers = [keras.Input(input_shape), keras.layers.Flatten()]
    layers += [keras.layers.Dense(hidden, activation=activation) for _ in range(3)]
    model = keras.Sequential(layers + [keras.layers.Dense(n_classes, activation="softmax")])
    model.compile(optimizer(opt, lr), "sparse_categorical_crossentropy")
    return model


def small_cnn(input_shape, n_classes=10, *, opt="adam", lr=1e-3):
    """Two 3x3 convolutions, pooling and a Dense head: a small CIFAR-style CNN."""
    import keras

    model = keras.Sequential([
        keras.Input(input_shape),
        keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(n_classes, activation="softmax"),
    ])
    model.compile(optimizer(opt, lr), "sparse_categorical_crossentropy")
    return model


def builder(kind: str, input_shape, seed: int = 0):
    """``build(i)``: the i-th model of ``kind`` ("mlp" or "cnn"), its weights seeded by ``seed + i``."""
    import keras

    make = {"mlp": mlp3, "cnn": small_cnn}[kind]

    def build(i):
        keras.utils.set_random_seed(seed + i)
        return make(input_shape)

    return build


def tuner_build_fn(input_shape, n_classes=10, hidden=64):
    """``build_fn(config)`` for the Hyperband benchmark: a one-hidden-layer MLP per Table 2.3 config."""
    import keras

    def build(config):
        model = keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                                  keras.layers.Dense(hidden, activation=config["activation"]),
                                  keras.layers.Dense(n_classes, activation="softmax")])
        model.compile(optimizer(config["optimizer"], config["learning_rate"]), "sparse_categorical_crossentropy",
                      metrics=["accuracy"])
        return model

    return build


#: The search space of the Keras Tuner comparison (thesis Table 2.3 with a continuous learning rate).
HP_ACTIVATIONS = ["sigmoid", "leaky_relu", "tanh", "relu"]
HP_OPTIMIZERS = ["adam", "sgd", "adagrad", "momentum"]
HP_BATCH_SIZES = [20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70]


def hp_build_fn(input_shape, n_classes=10, hidden=64):
    """``build_fn(hp)`` in Keras Tuner's style, shared by Keras Tuner and sparkrm's ``Tuner``: one-hidden-layer MLP.

    The batch size is read here so that it is part of the space; the tuner's fit reads it back from ``hp``.
    """
    import keras

    def build(hp):
        activation = hp.Choice("activation", HP_ACTIVATIONS)
        opt = hp.Choice("optimizer", HP_OPTIMIZERS)
        lr = hp.Float("learning_rate", 1e-6, 0.1, sampling="log")
        hp.Choice("batch_size", HP_BATCH_SIZES)
        model = keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                                  keras.layers.Dense(hidden, activation=activation),
                                  keras.layers.Dense(n_classes, activation="softmax")])
        model.compile(optimizer(opt, lr), "sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    return build
