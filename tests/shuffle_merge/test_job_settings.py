"""Per-job Riffle settings are checked before any job starts (no Spark needed for the errors)."""

import pytest

from shuffle_merge import job_settings
from spark_plugin.errors import ConfigError


def test_unknown_setting_names_the_known_ones():
    with pytest.raises(TypeError, match=r"unknown setting .fanin.; known: .*fan_in"):
        with job_settings(None, fanin=3):
            pass


@pytest.mark.parametrize("settings,message", [
    ({"fan_in": 1}, "spark.riffle.merge.fanIn must be an integer in [2, 10000]. Got '1'."),
    ({"best_effort": 0}, "spark.riffle.bestEffort.fraction must be a number in (0, 1]. Got '0'."),
    ({"policy": "lifo"}, "spark.riffle.merge.policy must be one of 'blocksize', 'fanin'. Got 'lifo'."),
    ({"best_effort_timeout": "soon"}, "spark.riffle.bestEffort.timeout must be a duration >= 0ms. Got 'soon'."),
])
def test_bad_values_fail_with_the_key_and_range(settings, message):
    with pytest.raises(ConfigError) as info:
        with job_settings(None, **settings):
            pass
    assert message in str(info.value)
