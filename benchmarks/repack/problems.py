"""The classification problems the tuner comparisons search on, all on this machine (nothing downloads).

* ``digits``: scikit-learn's bundled 8x8 digits, 10 classes (1,797 rows).
* ``breast-cancer``: scikit-learn's bundled Wisconsin breast cancer table, 2 classes (569 rows, 30 features,
  standardized by the training rows' mean and deviation).
* ``generated``: ``tf_packing.make_classification``, 10 Gaussian classes in 32 dimensions with heavy noise
  (2,048 rows): a problem where no configuration nears 100%.

Each returns the split of ``seed`` (a quarter, or a fifth for ``generated``, held out for validation).
"""

from __future__ import annotations

PROBLEMS = ("digits", "breast-cancer", "generated")


def load(problem: str, seed: int):
    """``((x, y), (x_val, y_val), n_classes)`` of ``problem`` for ``seed``."""
    from tf_packing import load_digits, make_classification

    if problem == "digits":
        return (*load_digits(seed=seed), 10)
    if problem == "generated":
        return (*make_classification(2048, shape=(32,), n_classes=10, seed=seed), 10)
    if problem == "breast-cancer":
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import train_test_split

        x, y = load_breast_cancer(return_X_y=True)
        x_train, x_val, y_train, y_val = train_test_split(x.astype("float32"), y.astype("int32"), test_size=0.25,
                                                          random_state=seed, stratify=y)
        mean, std = x_train.mean(0), x_train.std(0) + 1e-6
        return ((x_train - mean) / std, y_train), ((x_val - mean) / std, y_val), 2
    raise ValueError(f"problem {problem!r}: choose one of {', '.join(PROBLEMS)}")
