# daemon store: hand-back, gpubin files, state permissions, disk full
