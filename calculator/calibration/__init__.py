"""Close the loop with real runs (issue 16): read a verl run's log, compare it with the prediction, fit the
efficiency fields a log can identify, save them as a calibration profile, and explain a real OOM."""
